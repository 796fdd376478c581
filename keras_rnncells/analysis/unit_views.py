"""Cell activations shown: tokens coloured by one unit, and heat maps of all units.

After Karpathy, Johnson & Fei-Fei (2015, "Visualizing and understanding
recurrent networks", Figures 2 and 4): each token's background is the
activation of one unit after reading it. `scale_of` gives the colour scale
(a hidden unit ``h``: blue for negative, white at 0, red for positive,
symmetric about 0 up to the largest magnitude shown; a gate: white at its
lowest value shown to green at its highest), `activation_section` writes the
HTML of one unit over some texts, `activation_page` the self-contained page around the sections,
`text_png` the same colouring as a PNG figure, and `hidden_png` the heat map
of every unit of each layer over one input (units by steps).
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from keras_rnncells.analysis.render import html_page, token_ticks, visible
from keras_rnncells.files import write_atomically

__all__ = [
    "ColorScale",
    "activation_page",
    "activation_section",
    "hidden_png",
    "scale_of",
    "text_png",
]

PLOT_MISSING = "activation figures need matplotlib: pip install 'keras-rnncells[plot]'"
BLUE, WHITE, RED, GREEN = (33, 102, 172), (255, 255, 255), (178, 24, 43), (0, 109, 44)
LINE_CHARACTERS = 90  # a PNG line of tokens wraps after this many characters
FONT_POINTS = 10
CHARACTER_INCHES = 0.602 * FONT_POINTS / 72  # DejaVu Sans Mono's advance: 0.602 em
LINE_INCHES = 0.3
MARGIN_INCHES = 0.3
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 68em; color: #222; }
.text { font-family: ui-monospace, monospace; line-height: 2.1; margin: 0.3em 0; }
.token { padding: 0.12em 0.2em; margin: 0 0.04em; border-radius: 0.2em; }
.legend { display: flex; align-items: center; gap: 0.6em; margin: 0.6em 0 1em; }
.scale { width: 16em; height: 1em; border: 1px solid #999; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; }
img { max-width: 100%; }
"""


@dataclass(frozen=True)
class ColorScale:
    """Values from ``low`` to ``high`` mapped through ``colors`` (RGB
    triples, evenly spaced), described by ``label``."""

    low: float
    high: float
    colors: tuple[tuple[int, int, int], ...]
    label: str

    def rgb(self, value: float) -> tuple[int, int, int]:
        span = self.high - self.low
        level = float(np.clip((value - self.low) / span, 0.0, 1.0)) if span > 0 else 0.5
        position = level * (len(self.colors) - 1)
        index = min(int(position), len(self.colors) - 2)
        fraction = position - index
        start, end = self.colors[index], self.colors[index + 1]
        return tuple(round(a + (b - a) * fraction) for a, b in zip(start, end))

    def css(self, value: float) -> str:
        return "rgb({}, {}, {})".format(*self.rgb(value))

    def gradient(self) -> str:
        stops = ", ".join("rgb({}, {}, {})".format(*color) for color in self.colors)
        return f"linear-gradient(to right, {stops})"


def scale_of(signal: str, values: Sequence[np.ndarray]) -> ColorScale:
    """The colour scale of a unit of ``signal`` (``"h"`` or a gate's label)
    over the ``values`` shown (see the module)."""
    if signal != "h":
        shown = [np.asarray(v) for v in values if np.size(v)]
        low = min((float(v.min()) for v in shown), default=0.0)
        high = max((float(v.max()) for v in shown), default=1.0)
        label = f"gate {signal}: lowest shown (white) to highest shown (green)"
        return ColorScale(low, high, (WHITE, GREEN), label)
    largest = max((float(np.abs(v).max()) for v in values if np.size(v)), default=1.0)
    largest = largest if largest > 0 else 1.0
    return ColorScale(
        -largest, largest, (BLUE, WHITE, RED), "hidden unit: negative (blue), 0, positive (red)"
    )


def dark(rgb: tuple[int, int, int]) -> bool:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 140


def token_span(token: str, value: float, scale: ColorScale) -> str:
    rgb = scale.rgb(value)
    text = "#fff" if dark(rgb) else "#222"
    tooltip = html.escape(f"{visible(token)}: {value:+.3f}")
    return (
        f'<span class="token" style="background: {scale.css(value)}; color: {text}" '
        f'title="{tooltip}">{html.escape(visible(token))}</span>'
    )


def activation_section(
    heading: str,
    description: str,
    tokens: Sequence[Sequence[str]],
    values: Sequence[np.ndarray],
    scale: ColorScale,
    table: str = "",
) -> str:
    """One unit over some texts: a heading, a sentence saying what it is, a
    legend of ``scale`` and each text's tokens coloured by its value (hover
    for the number); ``table`` (HTML) follows."""
    legend = (
        f'<div class="legend"><span>{scale.low:+.2f}</span>'
        f'<span class="scale" style="background: {scale.gradient()}"></span>'
        f"<span>{scale.high:+.2f}</span><span>{html.escape(scale.label)}</span></div>"
    )
    rows = []
    for row_tokens, row_values in zip(tokens, values):
        spans = " ".join(
            token_span(token, float(value), scale) for token, value in zip(row_tokens, row_values)
        )
        rows.append(f'<p class="text">{spans}</p>')
    intro = [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(description)}</p>", legend]
    return "\n".join([*intro, *rows, table])


def html_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f'<td class="number">{value:.3f}</td>'
        if isinstance(value, int):
            return f'<td class="number">{value}</td>'
        return f"<td>{html.escape(str(value))}</td>"

    head = "".join(f"<th>{html.escape(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def embedded_png(path: Path, alt: str) -> str:
    """An ``<img>`` holding the PNG at ``path`` (a data URI: the page stays one file)."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def activation_page(title: str, sections: Sequence[str]) -> str:
    """The self-contained HTML page (inline CSS, images as data URIs, no
    script, nothing fetched) around ``sections``."""
    return html_page(title, STYLE, [f"<h1>{html.escape(title)}</h1>", *sections])


def figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(PLOT_MISSING) from None
    return Figure


def colormap(scale: ColorScale):
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list(
        "scale", [tuple(c / 255 for c in color) for color in scale.colors]
    )


def wrapped(tokens: Sequence[str], width: int) -> list[list[int]]:
    """Token indices in lines of at most ``width`` characters (a token longer
    than that alone on its line)."""
    lines: list[list[int]] = [[]]
    used = 0
    for index, token in enumerate(tokens):
        size = len(visible(token)) + 1
        if lines[-1] and used + size > width:
            lines.append([])
            used = 0
        lines[-1].append(index)
        used += size
    return lines


def text_png(
    tokens: Sequence[Sequence[str]],
    values: Sequence[np.ndarray],
    scale: ColorScale,
    path: str | os.PathLike,
    title: str,
) -> Path:
    """The texts' tokens on coloured boxes (one text after another, wrapped
    at `LINE_CHARACTERS` characters, a gap between texts), a colour bar of
    ``scale``, written to ``path`` as PNG (atomically). Needs matplotlib."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    figure = figure_class()
    lines = []  # (row, token indices), None for the gap between texts
    for row, row_tokens in enumerate(tokens):
        if lines:
            lines.append(None)
        lines.extend((row, line) for line in wrapped(row_tokens, LINE_CHARACTERS))
    width = max(
        [sum(len(visible(tokens[r][i])) + 1 for i in line) for r, line in filter(None, lines)],
        default=10,
    )
    # Inches: one data unit is one character of the monospace font, a line 0.3.
    text_width = CHARACTER_INCHES * (width + 1)
    text_height = LINE_INCHES * len(lines)
    fig_width = max(6.0, text_width + 2 * MARGIN_INCHES)
    title_lines = title.count("\n") + 1
    top = 0.25 + 0.2 * title_lines
    fig_height = top + text_height + 0.95
    fig = figure(figsize=(fig_width, fig_height))
    axes = fig.add_axes(
        (
            MARGIN_INCHES / fig_width,
            (fig_height - top - text_height) / fig_height,
            text_width / fig_width,
            text_height / fig_height,
        )
    )
    for y, entry in enumerate(lines):
        if entry is None:
            continue
        row, line = entry
        x = 0.0
        for index in line:
            token = visible(tokens[row][index])
            rgb = scale.rgb(float(values[row][index]))
            face = tuple(c / 255 for c in rgb)
            axes.add_patch(
                Rectangle((x, y + 0.1), len(token) + 0.8, 0.8, facecolor=face, edgecolor="none")
            )
            axes.text(
                x + 0.4,
                y + 0.5,
                token,
                va="center_baseline",
                ha="left",
                family="DejaVu Sans Mono",
                fontsize=FONT_POINTS,
                color="white" if dark(rgb) else "#222",
                parse_math=False,
            )
            x += len(token) + 1
    axes.set_xlim(0, width + 1)
    axes.set_ylim(len(lines), 0)
    axes.set_axis_off()
    fig.text(
        MARGIN_INCHES / fig_width,
        1 - 0.15 / fig_height,
        title,
        va="top",
        ha="left",
        fontsize=10,
        parse_math=False,
    )
    bar_width = min(5.0, fig_width - 2 * MARGIN_INCHES)
    bar_axes = fig.add_axes(
        (MARGIN_INCHES / fig_width, 0.55 / fig_height, bar_width / fig_width, 0.15 / fig_height)
    )
    mappable = ScalarMappable(Normalize(scale.low, scale.high), colormap(scale))
    bar = fig.colorbar(mappable, cax=bar_axes, orientation="horizontal")
    bar.set_label(scale.label, fontsize=9)
    bar.ax.tick_params(labelsize=8)
    write_atomically(Path(path), lambda temporary: fig.savefig(temporary, dpi=100, format="png"))
    return Path(path)


def hidden_png(
    layers: Sequence[tuple[str, np.ndarray, Sequence[str] | None]],
    path: str | os.PathLike,
    title: str,
) -> Path:
    """Heat maps of every hidden unit over one input, one panel per layer:
    ``(name, activations (steps, units), tokens or None)``; units on the
    y axis, steps on the x axis (labelled with the tokens when they fit), a
    shared colour bar (blue negative, white 0, red positive), written to
    ``path`` as PNG (atomically). Needs matplotlib."""
    figure = figure_class()
    largest = max((float(np.abs(v).max()) for _, v, _ in layers if np.size(v)), default=1.0)
    scale = scale_of("h", [np.array([largest])])
    steps = max(v.shape[0] for _, v, _ in layers)
    fig = figure(
        figsize=(min(max(6.0, 0.22 * steps + 2.5), 18.0), 1.2 + 2.6 * len(layers)),
        layout="constrained",
    )
    panels = fig.subplots(len(layers), 1, squeeze=False)[:, 0]
    image = None
    for axes, (name, values, tokens) in zip(panels, layers):
        image = axes.imshow(
            values.T,
            aspect="auto",
            interpolation="nearest",
            cmap=colormap(scale),
            vmin=scale.low,
            vmax=scale.high,
        )
        axes.set_ylabel("unit")
        axes.set_title(name, fontsize=10, loc="left", parse_math=False)
        if tokens is not None and len(tokens) <= 80:
            token_ticks(axes, tokens, rotation=70, fontsize=8)
        else:
            axes.set_xlabel("step")
    fig.colorbar(image, ax=list(panels), label="activation", fraction=0.03)
    fig.suptitle(title, fontsize=11, parse_math=False)
    write_atomically(Path(path), lambda temporary: fig.savefig(temporary, dpi=100, format="png"))
    return Path(path)
