"""Omission scores shown: a self-contained HTML page, and a bar chart per sentence.

The score of a token (`keras_rnncells.analysis.omission`, Kádár, Chrupała &
Alishahi 2016)::

    omission(i, S) = 1 - cos(h_end(S), h_end(S \\ w_i))

`omission_html` colours each token's background from white (0) to red (the
page's highest score); `omission_png` draws one sentence's scores as bars
(matplotlib, the ``plot`` extra).
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keras_rnncells.checks import check_positive_int
from keras_rnncells.files import write_atomically

__all__ = ["PLOT_MISSING", "omission_html", "omission_png"]

PLOT_MISSING = "omission_png needs matplotlib: pip install 'keras-rnncells[plot]'"
# The darkest background (the page's highest score) and from where the text turns white.
RED = (200, 0, 0)
LIGHT_TEXT_FROM = 0.6

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 60em; color: #222; }
.sentence { line-height: 2.2; margin: 0.4em 0; }
.token { padding: 0.15em 0.25em; margin: 0 0.05em; border-radius: 0.2em; }
.legend { display: flex; align-items: center; gap: 0.6em; margin: 1em 0 1.5em; }
.scale { width: 16em; height: 1em; border: 1px solid #999;
         background: linear-gradient(to right, #fff, rgb(200, 0, 0)); }
table { border-collapse: collapse; margin-right: 2em; }
td, th { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.tables { display: flex; flex-wrap: wrap; align-items: flex-start; }
"""


def omission_html(
    pieces_per_sentence: Sequence[Sequence[str]],
    scores_per_sentence: Sequence[Sequence[float]],
    title: str,
    token_means: Sequence[tuple[str, float, int]] | None = None,
    top: int = 15,
) -> str:
    """A self-contained HTML page (inline CSS, no script, nothing fetched) of
    sentences whose tokens are coloured by omission score::

        omission(i, S) = 1 - cos(h_end(S), h_end(S \\ w_i))

    (Kádár, Chrupała & Alishahi 2016). Backgrounds go linearly from white
    (score 0) to red (the highest score of the page; negative scores, rounding
    noise, count as 0); each token's ``title`` tooltip gives its score. With
    ``token_means`` (`mean_by_token`'s list, highest mean first), tables of
    its ``top`` first and ``top`` last tokens follow. All text is escaped."""
    check_positive_int("top", top)
    sentences = checked_sentences(pieces_per_sentence, scores_per_sentence)
    highest = max((float(scores.max()) for _, scores in sentences if scores.size), default=0.0)
    highest = max(highest, 0.0)
    body = [f"<h1>{html.escape(title)}</h1>", legend(highest)]
    for pieces, scores in sentences:
        spans = " ".join(token_span(piece, score, highest) for piece, score in zip(pieces, scores))
        body.append(f'<p class="sentence">{spans}</p>')
    if token_means is not None:
        body.append(token_tables(token_means, top))
    return html_page(title, STYLE, body)


def token_ticks(axes: Any, tokens: Sequence[str], rotation: int, **options: Any) -> None:
    """Labels the x axis of ``axes`` with ``tokens`` (one per step, slanted by
    ``rotation`` degrees, ``options`` for the labels), blanks made visible and
    ``parse_math=False``: a "$" in user text is a dollar, not a formula."""
    axes.set_xticks(
        np.arange(len(tokens)),
        [visible(token) for token in tokens],
        rotation=rotation,
        ha="right",
        rotation_mode="anchor",
        parse_math=False,
        **options,
    )


def html_page(title: str, style: str, body: Sequence[str]) -> str:
    """A self-contained HTML page: ``title``, the inline CSS ``style`` and
    the ``body`` elements (no script, nothing fetched)."""
    head = ['<meta charset="utf-8">', f"<title>{html.escape(title)}</title>"]
    opening = ["<!DOCTYPE html>", '<html lang="en">', "<head>", *head]
    return "\n".join(
        [*opening, f"<style>{style}</style>", "</head>", "<body>", *body, "</body>", "</html>", ""]
    )


def checked_sentences(
    pieces_per_sentence: Sequence[Sequence[str]], scores_per_sentence: Sequence[Sequence[float]]
) -> list[tuple[list[str], np.ndarray]]:
    """The sentences as ``(pieces, float scores)`` pairs, or a ValueError."""
    if len(pieces_per_sentence) != len(scores_per_sentence):
        raise ValueError(
            "Argument `scores_per_sentence` must hold one row per sentence of "
            f"`pieces_per_sentence` ({len(pieces_per_sentence)}), "
            f"received {len(scores_per_sentence)}"
        )
    sentences = []
    for row, (pieces, scores) in enumerate(zip(pieces_per_sentence, scores_per_sentence)):
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        if len(pieces) != len(scores):
            raise ValueError(
                "Argument `scores_per_sentence` must match `pieces_per_sentence` token for "
                f"token, received {len(scores)} scores for {len(pieces)} tokens in row {row}"
            )
        sentences.append(([str(piece) for piece in pieces], scores))
    return sentences


def shade(score: float, highest: float) -> float:
    """Where ``score`` lies on the page's scale, in [0, 1]."""
    return float(np.clip(score / highest, 0.0, 1.0)) if highest > 0 else 0.0


def background(level: float) -> str:
    """The CSS colour at ``level`` in [0, 1] of the white-to-red scale."""
    red, green, blue = (round(255 + (end - 255) * level) for end in RED)
    return f"rgb({red}, {green}, {blue})"


def visible(piece: str) -> str:
    """A token as shown: a blank one (a space of a character model) as "␣"."""
    return piece if piece.strip() else "␣" * max(len(piece), 1)


def token_span(piece: str, score: float, highest: float) -> str:
    level = shade(score, highest)
    text = "#fff" if level >= LIGHT_TEXT_FROM else "#222"
    tooltip = html.escape(f"{visible(piece)}: {score:.4f}")
    return (
        f'<span class="token" style="background: {background(level)}; color: {text}" '
        f'title="{tooltip}">{html.escape(visible(piece))}</span>'
    )


def legend(highest: float) -> str:
    return (
        '<div class="legend"><span>0</span><span class="scale"></span>'
        f"<span>{highest:.4f}</span><span>Background: the omission score of the token, "
        "1 − cos(h<sub>end</sub>(S), h<sub>end</sub>(S without the token)), from white (0, the "
        "encoding does not change) to red (the highest score on this page). Hover over a "
        "token for its score.</span></div>"
    )


def token_tables(token_means: Sequence[tuple[str, float, int]], top: int) -> str:
    means = list(token_means)
    most = table("Most important tokens", means[:top])
    least = table("Least important tokens", means[::-1][:top])
    return f'<h2>Mean omission score per token</h2>\n<div class="tables">{most}{least}</div>'


def table(caption: str, rows: Sequence[tuple[str, float, int]]) -> str:
    cells = "".join(
        f'<tr><td>{html.escape(visible(str(token)))}</td><td class="number">{float(mean):.4f}</td>'
        f'<td class="number">{int(count)}</td></tr>'
        for token, mean, count in rows
    )
    return (
        f"<table><caption>{html.escape(caption)}</caption>"
        f"<tr><th>token</th><th>mean</th><th>count</th></tr>{cells}</table>"
    )


def omission_png(
    pieces: Sequence[str], scores: Sequence[float], path: str | os.PathLike, title: str
) -> Path:
    """A bar chart of one sentence's omission scores, written to ``path`` as
    PNG, atomically (a temporary file in the same folder, then renamed); the
    path written. One bar per token, labelled with the token::

        omission(i, S) = 1 - cos(h_end(S), h_end(S \\ w_i))

    (Kádár, Chrupała & Alishahi 2016). Needs matplotlib (the ``plot`` extra):
    an ImportError says how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(PLOT_MISSING) from None
    ((pieces, scores),) = checked_sentences([pieces], [scores])
    path = Path(path)
    fig = Figure(figsize=(max(4.0, 1.5 + 0.35 * len(pieces)), 3.6))
    axes = fig.add_subplot()
    axes.bar(np.arange(len(pieces)), scores, color="tab:red")
    token_ticks(axes, pieces, rotation=60)
    axes.set_ylabel("omission score 1 − cos")
    axes.set_title(title, parse_math=False)
    axes.set_xlim(-0.6, max(len(pieces), 1) - 0.4)
    fig.tight_layout()
    write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=100, format="png"))
    return path
