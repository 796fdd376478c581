"""Gate saturation: how often each gate unit is nearly shut or nearly open.

For a gate unit ``g`` (an output of the cell's ``recurrent_activation``,
recorded by `keras_rnncells.analysis.recording`) over the valid time steps
``S`` of a held-out set (Karpathy, Johnson & Fei-Fei 2015, "Visualizing and
understanding recurrent networks", §4.3 and Figure 3)::

    left(g)  = |{t in S : g_t < 0.1}| / |S|      (left-saturated: shut)
    right(g) = |{t in S : g_t > 0.9}| / |S|      (right-saturated: open)

A unit on the diagonal ``left + right = 1`` is always saturated, one at the
origin never. `SaturationTally` counts them batch by batch, `saturation_png`
draws the paper's scatter: one point per unit, a colour and marker per gate,
one panel per layer.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from keras_rnncells.checks import check_float
from keras_rnncells.files import write_atomically

__all__ = ["GateFractions", "SaturationTally", "saturation_fractions", "saturation_png"]

LOW, HIGH = 0.1, 0.9
PLOT_MISSING = "saturation_png needs matplotlib: pip install 'keras-rnncells[plot]'"
GATE_STYLES = (
    ("tab:blue", "o"),
    ("tab:red", "s"),
    ("tab:green", "^"),
    ("tab:purple", "D"),
    ("tab:orange", "v"),
)


@dataclass(frozen=True)
class GateFractions:
    """Per unit, the fractions of ``steps`` valid steps left- and
    right-saturated (float64 ``(units,)`` each)."""

    left: np.ndarray
    right: np.ndarray
    steps: int


def saturation_fractions(
    gates: np.ndarray, mask: np.ndarray | None = None, low: float = LOW, high: float = HIGH
) -> GateFractions:
    """The left (``g < low``) and right (``g > high``) saturation fractions of
    every unit of ``gates`` ``(batch, steps, units)`` over the steps where
    ``mask`` ``(batch, steps)`` is true (all steps without one); Karpathy,
    Johnson & Fei-Fei 2015. With no valid step the fractions are NaN."""
    tally = SaturationTally(low, high)
    tally.add("layer", "gate", gates, mask)
    return tally.fractions()["layer"]["gate"]


class SaturationTally:
    """Saturation counts per ``(layer, gate)``, added batch by batch."""

    def __init__(self, low: float = LOW, high: float = HIGH) -> None:
        self.low = check_float("low", low, "[0, 1]")
        self.high = check_float("high", high, "[0, 1]")
        if self.low > self.high:
            raise ValueError(f"Argument `low` must not exceed `high`, received {low} > {high}")
        self.counts: dict[str, dict[str, list]] = {}

    def add(
        self, layer: str, gate: str, values: np.ndarray, mask: np.ndarray | None = None
    ) -> None:
        values = np.asarray(values)
        if values.ndim != 3:
            raise ValueError(
                f"Argument `values` must be (batch, steps, units), received shape {values.shape}"
            )
        valid = np.ones(values.shape[:2], bool) if mask is None else np.asarray(mask, bool)
        if valid.shape != values.shape[:2]:
            raise ValueError(
                f"Argument `mask` must be (batch, steps) = {values.shape[:2]}, received "
                f"shape {valid.shape}"
            )
        kept = values[valid]  # (valid steps, units)
        entry = self.counts.setdefault(layer, {}).setdefault(
            gate, [np.zeros(values.shape[-1]), np.zeros(values.shape[-1]), 0]
        )
        entry[0] += (kept < self.low).sum(axis=0)
        entry[1] += (kept > self.high).sum(axis=0)
        entry[2] += len(kept)

    def fractions(self) -> dict[str, dict[str, GateFractions]]:
        """``{layer: {gate: GateFractions}}`` in the order added."""
        result: dict[str, dict[str, GateFractions]] = {}
        for layer, gates in self.counts.items():
            result[layer] = {}
            for gate, (left, right, steps) in gates.items():
                with np.errstate(invalid="ignore", divide="ignore"):
                    result[layer][gate] = GateFractions(left / steps, right / steps, int(steps))
        return result


def saturation_png(
    fractions: Mapping[str, Mapping[str, GateFractions]],
    path: str | os.PathLike,
    title: str,
    notes: Sequence[str] = (),
) -> Path:
    """Karpathy, Johnson & Fei-Fei's (2015) saturation scatter of
    `SaturationTally.fractions`, written to ``path`` as PNG (atomically):
    x = fraction of steps left-saturated (< 0.1), y = fraction right-saturated
    (> 0.9), one point per unit, a colour and marker per gate, one panel per
    layer (titled with the layer and its number of steps), the diagonal
    ``x + y = 1`` (always saturated) dashed. Needs matplotlib (the ``plot``
    extra)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(PLOT_MISSING) from None
    layers = [name for name, gates in fractions.items() if gates]
    if not layers:
        raise ValueError("Argument `fractions` holds no gate: nothing to plot")
    columns = min(len(layers), 3)
    rows = -(-len(layers) // columns)
    fig = Figure(figsize=(4.2 * columns, 4.2 * rows + 0.6), layout="constrained")
    panels = fig.subplots(rows, columns, squeeze=False)
    for axes, layer in zip(panels.flat, layers):
        for (gate, values), (color, marker) in zip(fractions[layer].items(), GATE_STYLES * 4):
            axes.scatter(
                values.left,
                values.right,
                s=22,
                c=color,
                marker=marker,
                alpha=0.7,
                edgecolors="none",
                label=f"{gate} ({len(values.left)} units)",
            )
        steps = next(iter(fractions[layer].values())).steps
        axes.plot([0, 1], [1, 0], "--", color="0.6", linewidth=1)
        axes.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), aspect="equal")
        axes.set_xlabel("fraction left-saturated (< 0.1)")
        axes.set_ylabel("fraction right-saturated (> 0.9)")
        axes.set_title(f"{layer}\n{steps:,} steps", fontsize=10, parse_math=False)
        axes.grid(alpha=0.3)
        axes.legend(title="gate", loc="upper right", fontsize=8, title_fontsize=8)
    for axes in list(panels.flat)[len(layers) :]:
        axes.set_axis_off()
    lines = textwrap.wrap(title, 40 * columns) + textwrap.wrap("; ".join(notes), 48 * columns)
    fig.suptitle("\n".join(lines), fontsize=11, parse_math=False)
    write_atomically(Path(path), lambda temporary: fig.savefig(temporary, dpi=100, format="png"))
    return Path(path)
