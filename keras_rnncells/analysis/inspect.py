"""``rnncells inspect RUN_DIR``: the analysis views of a trained run, written
into ``RUN_DIR/inspect/``.

Built so far: omission scores (`keras_rnncells.analysis.omission`) of the
sentiment application's encoder, per token for a few texts (HTML and one PNG
per text) and averaged per word piece over the run's test set (in the HTML
and in ``omission_tokens.json``). Runs of the other applications and tasks
are refused with an error that says so.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from keras_rnncells.analysis.omission import (
    mean_by_token,
    omission_scores,
    sentiment_encoder,
    sentiment_token_ids,
)
from keras_rnncells.analysis.render import omission_html, omission_png
from keras_rnncells.apps.runs import read_model
from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_splits
from keras_rnncells.training import write_atomically

INSPECT_DIR = "inspect"
SHOWN = 10  # test texts shown one by one when no --text is given
PNG_TEXTS = 5  # bar charts written: the first texts shown
MAX_WORDS = 60  # longer texts are cut to their first words in the per-text views
CORPUS_LIMIT = 2000  # at most this many test texts for the per-piece means (IMDB has 25,000)
MIN_COUNT = 5  # a word piece needs this many occurrences for its mean to be listed


def inspect_run(
    run_dir: str | os.PathLike, texts: Sequence[str] | None = None, root: Any = None
) -> dict[str, Path]:
    """Writes the views of ``run_dir`` (a run directory of ``rnncells train``)
    into ``run_dir/inspect/``; returns the files written by name. ``texts``:
    the texts shown one by one (default: the first test texts); ``root``: the
    data folder (default: ``$RNNCELLS_DATA`` or ``../shared/data``)."""
    run_dir = Path(os.path.abspath(run_dir))
    if not run_dir.is_dir():
        raise ValueError(f"Argument `run_dir`: {run_dir} is not a run directory")
    model = read_model(run_dir)
    if not isinstance(model, SentimentClassifier):
        raise ValueError(
            f"Argument `run_dir`: {run_dir} holds a {type(model).__name__}; `rnncells inspect` "
            "has views for sentiment runs only so far"
        )
    dataset = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["settings"][
        "dataset"
    ]
    test_texts = sentiment_splits(dataset, root)["test"][0][:CORPUS_LIMIT]
    shown = [" ".join(text.split()[:MAX_WORDS]) for text in (texts or test_texts[:SHOWN])]
    return write_sentiment_views(model, shown, test_texts, run_dir / INSPECT_DIR, dataset)


def write_sentiment_views(
    model: SentimentClassifier,
    shown: Sequence[str],
    corpus: Sequence[str],
    out: Path,
    dataset: str,
) -> dict[str, Path]:
    """Omission scores of ``shown`` (HTML, and PNGs of the first texts) and
    the per-piece means over ``corpus``, written into ``out``."""
    encode = sentiment_encoder(model)
    corpus_ids, corpus_pieces = sentiment_token_ids(model, corpus)
    means = mean_by_token(omission_scores(encode, corpus_ids), corpus_pieces, MIN_COUNT)
    ids, pieces = sentiment_token_ids(model, shown)
    scores = omission_scores(encode, ids)
    written = {}
    title = (
        f"Omission scores of the sentiment encoder ({dataset} run), 1 − cos(h_S, h_S without w_i)"
    )
    page = omission_html(pieces, scores, title, token_means=means)
    written["html"] = out / "omission.html"
    write_atomically(written["html"], lambda path: Path(path).write_text(page, encoding="utf-8"))
    tokens = {
        "dataset": dataset,
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
