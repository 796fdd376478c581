"""``rnncells inspect RUN_DIR``: the analysis views of a trained run, written
into ``RUN_DIR/inspect/``.

For every run of ``rnncells train`` (each application, each task): the
unit views of `keras_rnncells.analysis.unit_report` (interpretable units
over the text, gate saturation, hidden-unit heat maps). For the sentiment
application (per word piece) and the date normalizer (``rnncells train
seq2seq``, per character) also the omission scores of their encoder
(`keras_rnncells.analysis.omission`), per token for a few texts (HTML and one
PNG per text) and averaged per token over the run's test set (in the HTML and
in ``omission_tokens.json``).
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from keras_rnncells.analysis.omission import (
    mean_by_token,
    omission_scores,
    sentiment_encoder,
    sentiment_token_ids,
    seq2seq_encoder,
    seq2seq_token_ids,
)
from keras_rnncells.analysis.render import omission_html, omission_png
from keras_rnncells.analysis.sources import run_source
from keras_rnncells.analysis.unit_report import write_unit_views
from keras_rnncells.apps.runs import read_model
from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_splits
from keras_rnncells.data.dates import date_splits
from keras_rnncells.files import write_atomically
from keras_rnncells.seq2seq import TextSeq2Seq

INSPECT_DIR = "inspect"
SHOWN = 10  # test texts shown one by one when no --text is given
PNG_TEXTS = 5  # bar charts written: the first texts shown
MAX_WORDS = 60  # longer texts are cut to their first words in the per-text views
CORPUS_LIMIT = 2000  # at most this many test texts for the per-token means (IMDB has 25,000)
MIN_COUNT = 5  # a token needs this many occurrences for its mean to be listed


class TextEncoder(NamedTuple):
    """What the omission view needs of a run: its encoder (`omission_scores`'
    ``encode``), its tokenization (texts to ids and tokens), its test texts and
    a label for titles."""

    encode: Callable
    tokenize: Callable
    test_texts: list[str]
    label: str


def text_encoder(model: Any, settings: dict, root: Any = None) -> TextEncoder | None:
    """The `TextEncoder` of a run's model and settings, None if it has none."""
    if isinstance(model, SentimentClassifier):
        dataset = settings["dataset"]
        texts = sentiment_splits(dataset, root)["test"][0]
        label = f"sentiment encoder ({dataset})"
        return TextEncoder(
            sentiment_encoder(model), partial(sentiment_token_ids, model), texts, label
        )
    if isinstance(model, TextSeq2Seq):
        sizes = (settings[name] for name in ("train_size", "test_size", "validation_size"))
        texts = [source for source, _ in date_splits(*sizes, settings["seed"])["test"]]
        return TextEncoder(
            seq2seq_encoder(model), partial(seq2seq_token_ids, model), texts, "date encoder"
        )
    return None


def inspect_run(
    run_dir: str | os.PathLike, texts: Sequence[str] | None = None, root: Any = None
) -> dict[str, Path]:
    """Writes the views of ``run_dir`` (a run directory of ``rnncells train``:
    any application or task) into ``run_dir/inspect/``; returns the files
    written by name. ``texts``: the texts shown one by one (default: the
    first held-out rows); ``root``: the data folder (default:
    ``$RNNCELLS_DATA`` or ``../shared/data``)."""
    run_dir = Path(os.path.abspath(run_dir))
    if not run_dir.is_dir():
        raise ValueError(f"Argument `run_dir`: {run_dir} is not a run directory")
    if not (run_dir / "results.json").is_file():
        raise ValueError(
            f"Argument `run_dir`: {run_dir} has no results.json: not a finished run of "
            "`rnncells train`"
        )
    model = read_model(run_dir)
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    source = run_source(model, results, root)
    if source is None:
        raise ValueError(
            f"Argument `run_dir`: {run_dir} holds a {type(model).__name__}, not a model of "
            "`rnncells train` (an application or a task)"
        )
    if texts is not None and not source.text_streams:
        raise ValueError(
            f"Argument `texts`: the {source.label} reads real-valued steps, not text: "
            "run without --text"
        )
    shown_batch = source.shown(texts)  # a bad text fails before any work
    out = run_dir / INSPECT_DIR
    written = write_unit_views(source, shown_batch, out, f"{source.label}, {run_dir.name}")
    encoder = text_encoder(model, results["settings"], root)
    if encoder is not None:
        corpus = encoder.test_texts[:CORPUS_LIMIT]
        shown = [" ".join(text.split()[:MAX_WORDS]) for text in (texts or corpus[:SHOWN])]
        note = written.pop("note", None)
        written.update(write_omission_views(encoder, shown, corpus, out))
        if note is not None:
            written["note"] = note
    return written


def write_omission_views(
    encoder: TextEncoder, shown: Sequence[str], corpus: Sequence[str], out: Path
) -> dict[str, Path]:
    """Omission scores of ``shown`` (HTML, and PNGs of the first texts) and
    the per-token means over ``corpus``, written into ``out``."""
    corpus_ids, corpus_pieces = encoder.tokenize(corpus)
    corpus_scores = omission_scores(encoder.encode, corpus_ids)
    means = mean_by_token(corpus_scores, corpus_pieces, MIN_COUNT)
    ids, pieces = encoder.tokenize(shown)
    scores = omission_scores(encoder.encode, ids)
    written = {}
    title = f"Omission scores of a {encoder.label}: 1 − cos(h_S, h_S without w_i)"
    page = omission_html(pieces, scores, title, token_means=means)
    written["html"] = out / "omission.html"
    write_atomically(written["html"], lambda path: Path(path).write_text(page, encoding="utf-8"))
    tokens = {
        "encoder": encoder.label,
        "test_texts": len(corpus),
        "min_count": MIN_COUNT,
        "tokens": [{"token": t, "mean": m, "count": c} for t, m, c in means],
    }
    written["tokens"] = out / "omission_tokens.json"
    document = json.dumps(tokens, indent=1, ensure_ascii=False)
    write_atomically(written["tokens"], lambda path: Path(path).write_text(document, "utf-8"))
    try:
        for index, (text, text_pieces, text_scores) in enumerate(zip(shown, pieces, scores)):
            if index == PNG_TEXTS or not text_pieces:
                break
            name = f"omission_{index + 1}.png"
            title = f"Omission scores: “{textwrap.shorten(text, 70, placeholder=' …')}”"
            written[name] = omission_png(text_pieces, text_scores, out / name, title)
    except ImportError as missing:  # matplotlib is the optional [plot] extra
        written["note"] = Path(str(missing))
    return written
