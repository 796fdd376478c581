"""Draws the requests of the fuzz suite (tests/export/test_fuzz_artifacts.py)
with hypothesis, in a process of its own.

Why a process: with a fixed seed, hypothesis still mixes into its draws
constants read from the source of every *local* module loaded (in a pytest
worker, whichever of the repository's modules earlier tests happened to
import, as they were when read). Here the only local module is this one, so
the draws depend on this file and the specification alone: the same
requests in every run.

Usage: ``python fuzz_requests.py SPEC.json OUT_DIR``. ``SPEC``:
``{"count": N, "apps": {name: {"kind": "colors"}}`` or
``{name: {"kind": "texts", "vocabulary": [pieces to draw from], "size":
vocabulary size, "characters": whether tokens are characters}}``. Writes
``OUT_DIR/requests.json``, a list of ``{"app", "kind", "note"}`` (and
``"texts"`` for the kind ``"texts"``), and ``OUT_DIR/arrays.npz``: by the
request's index, the colors ``(B, 3)`` float32 (kind ``"colors"``) or token
ids ``(B, T)`` int32 (kind ``"ids"``).

What is drawn, per application: ``N`` requests of each kind, plus one per
batch size at the longest length and, for the id models, at no length and
one per kind of id out of the vocabulary:

* colors: batches of 0, 1, 7 or 257 rows or a random few, uniform in
  [0, 1], in [-0.5, 1.5] or within ±1e6, with NaN, ±Inf and 32-bit floats of
  every kind (subnormal, huge, -0.0) at random places;
* texts: 0 to 400 pieces a text (words, or characters where the tokens are
  characters) from the vocabulary, unknown words, punctuation, emoji, CJK,
  combining marks, right-to-left scripts, zero-width and other Unicode
  characters, whitespace and words of 20 to 200 repeated characters, joined
  by spaces, tabs or line breaks; at most `MAX_REQUEST_CHARACTERS` a
  request (each text cut to its share);
* token ids: 0 to 400 steps, right- or left-padded, with holes or all
  padding, with ids out of the vocabulary (negative, its size and beyond,
  the int32 extremes) at random places.

hypothesis draws the shape of each request and a small pool of pieces; a
generator seeded by hypothesis fills the rows (a request of 257 texts of 400
words is 100,000 choices, beyond what hypothesis draws one by one).
"""

import json
import sys
import zlib
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

BATCH_SIZES = (0, 1, 7, 257)
LONGEST = 400
# onnxruntime-extensions' string ops take about 300 bytes per character of a
# request (the SavedModel far less): 257 texts of 400 long words (30 million
# characters) took over 7 GB. Each request is kept to this many characters.
MAX_REQUEST_CHARACTERS = 1_000_000
INT32 = np.iinfo(np.int32)
UNICODE = (
    "😀",
    "🎉🎉",
    "👩🏽‍🔬",  # a ZWJ sequence with a skin tone
    "🇯🇵",  # a flag: two regional indicators
    "❤️",  # with a variation selector
    "日本語",
    "浅蓝色",
    "한국어",
    "ｆｕｌｌｗｉｄｔｈ",
    "e\u0301",  # combining acute
    "a\u0308\u0323\u0301",  # stacked combining marks
    "\u0301",  # a combining mark alone
    "Crème brûlée",
    "ﬁne",  # a ligature
    "straße",
    "İSTANBUL",
    "ǅ",
    "ΣΊΣΥΦΟΣ",
    "שלום",  # Hebrew, right to left
    "مرحبا",  # Arabic
    "\u202eevil\u202c",  # right-to-left override
    "\u200f\u200e",  # direction marks
    "\u200b",  # zero-width space
    "\u200d",  # zero-width joiner
    "\ufeff",  # byte order mark
    "नमस्ते",
    "ภาษาไทย",
    "x\x00y",  # NUL inside a word
    "\x00",
    "\U0001d165\U0001d16d",  # musical symbols: marks that are not \p{Mn}
    "\ufffd",
    "<br />",
)
WHITESPACE = (" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", " \t \n ")
PUNCTUATION = tuple(",.!?;:'\"()-[]/#@&*")
SEPARATORS = st.sampled_from((" ", " ", " ", "  ", "\t", "\n", " , "))


def batch_sizes():
    return st.one_of(st.sampled_from(BATCH_SIZES), st.integers(0, 12))


def lengths():
    """0..400, short lengths and the ends more often."""
    return st.one_of(st.integers(0, 8), st.sampled_from((0, 1, LONGEST)), st.integers(0, LONGEST))


def pieces(vocabulary):
    """One piece of text: a vocabulary entry (maybe upper-cased), an unknown
    word, punctuation, a Unicode sample or any characters, whitespace, or a
    long word."""
    word = st.sampled_from(vocabulary)
    unknown = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12)
    anything = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
    long_word = st.builds(
        lambda w, n: w * n, st.one_of(word, st.sampled_from(UNICODE)), st.integers(20, 200)
    )
    return st.one_of(
        word,
        word.map(str.upper),
        unknown,
        st.sampled_from(PUNCTUATION),
        st.sampled_from(UNICODE),
        anything,
        st.sampled_from(WHITESPACE),
        long_word,
    )


@st.composite
def colors(draw, app, batch=None):
    rows = draw(batch if batch is not None else batch_sizes())
    low, high = draw(st.sampled_from(((0.0, 1.0), (-0.5, 1.5), (-1e6, 1e6))))
    special = st.one_of(
        st.sampled_from((np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-45, -0.0, 1.0000001)),
        st.floats(width=32),
    )
    specials = draw(st.lists(special, max_size=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rgb = rng.uniform(low, high, size=(rows, 3)).astype("float32")
    if rows:
        for value in specials:
            rgb[rng.integers(rows), rng.integers(3)] = value
    note = f"uniform in [{low}, {high}], specials {specials}" if rows else "empty"
    return app, "colors", rgb, note


@st.composite
def texts(draw, app, vocabulary, characters, batch=None, length=None):
    """B texts of 0..400 pieces each (characters where ``characters``), the
    pieces from a small drawn pool."""
    rows = draw(batch if batch is not None else batch_sizes())
    pool = draw(st.lists(pieces(vocabulary), min_size=1, max_size=8))
    separators = draw(st.lists(SEPARATORS, min_size=1, max_size=3))
    shapes = draw(st.lists(length if length is not None else lengths(), min_size=1, max_size=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    share = MAX_REQUEST_CHARACTERS // max(rows, 1)
    batch_texts = []
    for row in range(rows):
        count = shapes[row] if row < len(shapes) else int(rng.choice(shapes))
        chosen = [pool[i] for i in rng.integers(len(pool), size=count)]
        if characters:  # as many characters as drawn, cut from the pieces
            batch_texts.append("".join(chosen)[:count])
        else:
            batch_texts.append(separators[row % len(separators)].join(chosen)[:share])
    note = f"lengths {shapes}, pool {[p[:24] for p in pool]}" if rows else "empty"
    return app, "texts", batch_texts, note


def out_of_range(size):
    """Ids just and far out of a vocabulary of ``size``: Keras' ``Embedding``
    reads a negative one from the end, ONNX's Gather wraps it once more."""
    return (-1, -size, -size - 1, -2 * size, -2 * size - 1, size, size + 1, INT32.min, INT32.max)


@st.composite
def ids(draw, app, size, batch=None, length=None, outside=None):
    """(B, T) ids in [1, size), padded, with some out of [0, size) maybe."""
    rows = draw(batch if batch is not None else batch_sizes())
    steps = draw(length if length is not None else lengths())
    padding = draw(st.sampled_from(("none", "right", "left", "holes", "all")))
    if outside is None:
        value = st.one_of(
            st.sampled_from(out_of_range(size)),
            st.integers(INT32.min, INT32.max).filter(lambda i: not 0 <= i < size),
        )
        outside = st.one_of(st.just([]), st.lists(value, min_size=1, max_size=3))
    specials = draw(outside)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    token_ids = rng.integers(1, size, size=(rows, steps)).astype("int32")
    kept = rng.integers(0, steps + 1, size=(rows, 1))
    positions = np.arange(steps)[None, :]
    padded = {
        "none": np.zeros_like(token_ids, bool),
        "right": positions >= kept,
        "left": positions < steps - kept,
        "holes": rng.random(token_ids.shape) < 0.3,
        "all": np.ones_like(token_ids, bool),
    }[padding]
    token_ids[padded] = 0
    if token_ids.size:
        for value in specials:
            token_ids[rng.integers(rows), rng.integers(steps)] = value
    return app, "ids", token_ids, f"{padding} padding, out of range {specials}"


def drawn(strategy, count, label):
    """``count`` values of ``strategy`` from a seed made of ``label``."""
    found = []

    @seed(zlib.crc32(label.encode()))
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(request):
        found.append(request)

    collect()
    return found


def requests_of(name, spec, count):
    if spec["kind"] == "colors":
        kinds = {"colors": colors(name)}
        anchors = {f"colors {b}": colors(name, batch=st.just(b)) for b in BATCH_SIZES}
    else:
        vocabulary, size = spec["vocabulary"], spec["size"]
        kinds = {
            "texts": texts(name, vocabulary, spec["characters"]),
            "ids": ids(name, size),
        }
        anchors = {}
        longest = st.just(LONGEST)
        for b in BATCH_SIZES:
            batch = st.just(b)
            anchors[f"texts {b}"] = texts(name, vocabulary, spec["characters"], batch, longest)
            anchors[f"ids {b}"] = ids(name, size, batch, longest)
        for b in (0, 3):
            anchors[f"ids {b} by 0"] = ids(name, size, st.just(b), st.just(0))
        for v in out_of_range(size):
            anchors[f"ids {v}"] = ids(name, size, st.just(3), st.integers(1, 9), st.just([v]))
    requests = [r for label, s in anchors.items() for r in drawn(s, 1, f"{name} {label}")]
    return requests + [r for kind, s in kinds.items() for r in drawn(s, count, f"{name} {kind}")]


if __name__ == "__main__":
    specification = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = Path(sys.argv[2])
    listed, arrays = [], {}
    for name, spec in specification["apps"].items():
        for app, kind, inputs, note in requests_of(name, spec, specification["count"]):
            entry = {"app": app, "kind": kind, "note": note}
            if kind == "texts":
                entry["texts"] = inputs
            else:
                arrays[str(len(listed))] = inputs
            listed.append(entry)
    (out / "requests.json").write_text(json.dumps(listed), encoding="utf-8")
    np.savez(out / "arrays.npz", **arrays)
