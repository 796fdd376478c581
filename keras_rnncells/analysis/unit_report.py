"""The unit views of a run, written into a folder: ``activations.html`` and its figures.

* Interpretable units (`keras_rnncells.analysis.activations`; Karpathy,
  Johnson & Fei-Fei 2015): for each token feature (position in the line,
  depth in brackets and quotes, sentence polarity), the unit of highest
  ``|r|`` over the held-out rows, the shown texts coloured by it (HTML, and
  ``activations_<feature>.png``) and the next best units in a table; runs on
  real-valued steps get the table only.
* Gate saturation (`keras_rnncells.analysis.saturation`): ``saturation.png``
  (the paper's scatter) and ``saturation.json`` (per unit); cells without
  gates are named on the page.
* Hidden units: ``hidden_units.png``, every unit of each layer over the
  first shown row.
* ``units.json``: the units ranked per feature.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np

from keras_rnncells.analysis.activations import FEATURE_HELP, FEATURES, UnitPick
from keras_rnncells.analysis.collect import Statistics, held_out_statistics, shown_signals
from keras_rnncells.analysis.saturation import HIGH, LOW, saturation_png
from keras_rnncells.analysis.sources import Batch, RunSource
from keras_rnncells.analysis.unit_views import (
    activation_page,
    activation_section,
    embedded_png,
    hidden_png,
    html_table,
    scale_of,
    text_png,
)
from keras_rnncells.files import write_atomically

__all__ = ["write_unit_views"]

TOP = 5  # units listed per feature
PNG_ROWS = 6  # texts drawn in an activations PNG


def write_text(path: Path, text: str) -> Path:
    write_atomically(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
    return path


def plotting() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_unit_views(source: RunSource, shown_batch: Batch, out: Path, title: str) -> dict:
    """Writes the views of the module into ``out``; returns the files
    written by name (and ``"note"`` saying why no PNG, without matplotlib)."""
    statistics = held_out_statistics(source)
    shown = shown_signals(source, shown_batch)
    can_plot = plotting()
    written: dict = {}
    sections = [overview(source, statistics)]
    ranked = {feature: statistics.correlations.ranked(feature, TOP) for feature in FEATURES}
    for feature, picks in ranked.items():
        if picks:
            section, figure = feature_view(feature, picks, shown, out if can_plot else None)
            sections.append(section)
            if figure is not None:
                written[figure.name] = figure
    missing = [FEATURE_HELP[f] for f, picks in ranked.items() if not picks]
    if missing:
        sections.append(
            '<p class="note">No unit is shown for: '
            + "; ".join(missing)
            + " (constant or absent in the held-out rows).</p>"
        )
    fractions = statistics.saturation.fractions()
    sections.append(saturation_section(statistics, fractions))
    if fractions:
        document = {
            layer: {
                gate: {"left": v.left.tolist(), "right": v.right.tolist(), "steps": v.steps}
                for gate, v in gates.items()
            }
            for layer, gates in fractions.items()
        }
        written["saturation.json"] = write_text(out / "saturation.json", json.dumps(document))
        if can_plot:
            notes = gateless_notes(statistics)
            figure = saturation_png(
                fractions, out / "saturation.png", f"Gate saturation: {title}", notes
            )
            written["saturation.png"] = figure
            sections.append(embedded_png(figure, "gate saturation scatter"))
    if can_plot and shown:
        layers = []
        for name, (_, signals, stream) in shown.items():
            tokens = None if stream.tokens is None else stream.tokens[0]
            layers.append((name, signals["h"][0], tokens))
        figure = hidden_png(layers, out / "hidden_units.png", f"Hidden units, first row: {title}")
        written["hidden_units.png"] = figure
        sections.append("<h2>Every hidden unit over the first row shown</h2>")
        sections.append(embedded_png(figure, "hidden units heat map"))
    units = {
        feature: [pick.__dict__ for pick in picks] for feature, picks in ranked.items() if picks
    }
    written["units.json"] = write_text(out / "units.json", json.dumps(units, indent=1))
    page = activation_page(f"Inside the recurrence: {title}", sections)
    written = {"activations.html": write_text(out / "activations.html", page), **written}
    if not can_plot:
        written["note"] = Path("matplotlib is not installed: pip install 'keras-rnncells[plot]'")
    return written


def overview(source: RunSource, statistics: Statistics) -> str:
    rows = [
        (info.name, info.cell, info.stream, ", ".join(info.gates) or "none")
        for info in statistics.layers.values()
    ]
    return (
        f"<p>{statistics.rows:,} held-out rows of the {source.label} were read by the "
        "recurrent layers below; each signal of each unit (its output h, each gate) was "
        "correlated with the features of the tokens it had just read.</p>"
        + html_table(("layer", "cell", "reads", "gates"), rows)
    )


def gateless_notes(statistics: Statistics) -> list[str]:
    return [
        f"{info.name} ({info.cell}) has no gates: hidden-unit views only"
        for info in statistics.layers.values()
        if not info.gates
    ]


def feature_view(
    feature: str, picks: list[UnitPick], shown: dict, out: Path | None
) -> tuple[str, Path | None]:
    """The HTML section of a feature's best unit (texts coloured by it where
    they have tokens) and its PNG (None without tokens or ``out``)."""
    best = picks[0]
    table = html_table(
        ("layer", "signal", "unit", "r", "tokens"),
        [(p.layer, p.signal, p.unit, p.r, p.tokens) for p in picks],
    )
    heading = f"{feature.capitalize()}: {best.describe()}"
    description = (
        f"Of every unit of every layer and signal, this one correlates best with "
        f"{FEATURE_HELP[feature]} (Pearson r over {best.tokens:,} held-out tokens). "
        "Each token is coloured by the unit's activation right after reading it."
    )
    _, signals, stream = shown[best.layer]
    if stream.tokens is None:
        return f"<h2>{heading}</h2><p>Units ranked by |r| (real-valued steps, no text).</p>" + (
            table
        ), None
    values = [row[:, best.unit] for row in signals[best.signal]]
    scale = scale_of(best.signal, values)
    section = activation_section(heading, description, stream.tokens, values, scale, table)
    if out is None:
        return section, None
    title = "\n".join(
        textwrap.wrap(f"{feature}: {best.describe()}, over {best.tokens:,} tokens", 100)
    )
    figure = text_png(
        stream.tokens[:PNG_ROWS],
        values[:PNG_ROWS],
        scale,
        out / f"activations_{feature}.png",
        title,
    )
    return section, figure


def saturation_section(statistics: Statistics, fractions: dict) -> str:
    notes = "".join(f'<p class="note">{note}.</p>' for note in gateless_notes(statistics))
    if not fractions:
        return f"<h2>Gate saturation</h2>{notes}"
    rows = []
    for layer, gates in fractions.items():
        for gate, values in gates.items():
            rows.append(
                (
                    layer,
                    gate,
                    float(np.nanmean(values.left)),
                    float(np.nanmean(values.right)),
                    int(np.sum(values.left + values.right > 0.5)),
                    values.steps,
                )
            )
    return (
        "<h2>Gate saturation</h2><p>For each gate unit, the fraction of held-out steps where "
        f"it is left-saturated (&lt; {LOW}) or right-saturated (&gt; {HIGH}); Karpathy, "
        "Johnson &amp; Fei-Fei 2015, Figure 3.</p>"
        + notes
        + html_table(
            (
                "layer",
                "gate",
                "mean left-saturated",
                "mean right-saturated",
                "units saturated > half the time",
                "steps",
            ),
            rows,
        )
    )
