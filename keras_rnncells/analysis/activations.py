"""Interpretable units: the units whose activation best follows a property of the text.

Karpathy, Johnson & Fei-Fei (2015, "Visualizing and understanding recurrent
networks", §4.2) found, by looking, cells that track the position in a line
or whether the text is inside a quote. Here the search is automatic: for each
token feature ``y`` (`token_features`) and every unit ``u`` of every recorded
signal (a layer's output ``h`` or one of its gates, see
`keras_rnncells.analysis.recording`), over all valid tokens of a held-out
set, the Pearson correlation

    r(u, y) = cov(a_u, y) / (σ(a_u) σ(y))

of the unit's activation ``a_u`` at a token with the token's feature; the
unit with the largest ``|r|`` is the feature's pick. Features:

* ``position``: the token's index in its line (tokens since the sequence's
  start or the last line break, ``<eos>`` or a newline);
* ``bracket``: how deep the token sits in brackets and quotes (``( [ {``
  and a quote open it, the closing mark ends it; both marks count as inside);
* ``polarity``: the sentence's label (0 negative, 1 positive), at each of its
  tokens (sentiment runs and binary tasks).

`CorrelationTally` sums what ``r`` needs batch by batch (no activation is
kept), `UnitPick` names a unit and its ``r``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FEATURES", "CorrelationTally", "UnitPick", "token_features"]

FEATURES = ("position", "bracket", "polarity")
FEATURE_HELP = {
    "position": "the token's index in its line",
    "bracket": "how deep the token sits in brackets and quotes",
    "polarity": "the sentence's label (0 negative, 1 positive)",
}
LINE_BREAKS = frozenset({"<eos>", "\n"})
OPENING = frozenset({"(", "[", "{", "``", "-lrb-", "-lsb-", "-lcb-"})
CLOSING = frozenset({")", "]", "}", "''", "-rrb-", "-rsb-", "-rcb-"})
QUOTES = frozenset({'"', "“", "”"})


def token_features(tokens: Sequence[str], label: float | None = None) -> dict[str, np.ndarray]:
    """The features of each token of one sequence (see the module), float64
    arrays of ``len(tokens)``; ``polarity`` only with a ``label``."""
    position = np.zeros(len(tokens))
    depth = np.zeros(len(tokens))
    line_start, open_brackets, in_quote = 0, 0, False
    for index, token in enumerate(tokens):
        position[index] = index - line_start
        if token in LINE_BREAKS:
            line_start = index + 1
        if token in QUOTES:
            closing = in_quote
            in_quote = not in_quote
            depth[index] = open_brackets + 1
            if closing:
                continue
        elif token in OPENING:
            open_brackets += 1
        depth[index] = max(depth[index], open_brackets + in_quote)
        if token in CLOSING and open_brackets:
            open_brackets -= 1
    features = {"position": position, "bracket": depth}
    if label is not None:
        features["polarity"] = np.full(len(tokens), float(label))
    return features


@dataclass(frozen=True)
class UnitPick:
    """A unit (``unit`` of signal ``signal`` of layer ``layer``) and its
    Pearson ``r`` with a feature over ``tokens`` tokens."""

    feature: str
    layer: str
    signal: str
    unit: int
    r: float
    tokens: int

    def describe(self) -> str:
        name = "hidden unit" if self.signal == "h" else f"gate {self.signal} unit"
        return f"{self.layer}, {name} {self.unit} (r = {self.r:+.2f})"


class CorrelationTally:
    """The sums of Pearson's ``r`` per ``(layer, signal)`` and feature, added
    batch by batch: ``add(layer, signal, activations (N, units), features)``
    with ``features`` a mapping of feature name to ``(N,)`` values of the
    same N tokens."""

    def __init__(self) -> None:
        # (layer, signal, feature) -> [n, Σa, Σa², Σy, Σy², Σay]
        self.sums: dict[tuple[str, str, str], list] = {}

    def add(
        self, layer: str, signal: str, activations: np.ndarray, features: dict[str, np.ndarray]
    ) -> None:
        a = np.asarray(activations, np.float64)
        if a.ndim != 2:
            raise ValueError(
                f"Argument `activations` must be (tokens, units), received shape {a.shape}"
            )
        for feature, values in features.items():
            y = np.asarray(values, np.float64)
            if y.shape != (len(a),):
                raise ValueError(
                    f"Argument `features` must give {len(a)} values of {feature!r}, received "
                    f"shape {y.shape}"
                )
            entry = self.sums.setdefault((layer, signal, feature), [0, 0.0, 0.0, 0.0, 0.0, 0.0])
            entry[0] += len(a)
            entry[1] = entry[1] + a.sum(axis=0)
            entry[2] = entry[2] + (a * a).sum(axis=0)
            entry[3] += y.sum()
            entry[4] += (y * y).sum()
            entry[5] = entry[5] + y @ a

    def correlations(self, feature: str) -> dict[tuple[str, str], np.ndarray]:
        """Pearson's r of every unit with ``feature``, by ``(layer, signal)``:
        NaN for a unit or feature constant over the tokens."""
        result = {}
        for (layer, signal, name), (n, sa, saa, sy, syy, say) in self.sums.items():
            if name != feature or n < 2:
                continue
            covariance = n * say - sa * sy
            spread = np.sqrt(np.maximum(n * saa - sa * sa, 0.0) * max(n * syy - sy * sy, 0.0))
            scale = max(np.abs(sa).max() if np.ndim(sa) else abs(sa), abs(sy), 1.0) ** 2 * n
            constant = spread <= 1e-9 * scale  # rounding noise of a constant signal
            with np.errstate(invalid="ignore", divide="ignore"):
                result[(layer, signal)] = np.where(constant, np.nan, covariance / spread)
        return result

    def ranked(self, feature: str, top: int = 5, signals: Sequence[str] | None = None) -> list:
        """The ``top`` units of highest ``|r|`` with ``feature`` (`UnitPick`s),
        best first; only the signals named in ``signals`` if given."""
        counts = {
            (layer, signal): sums[0]
            for (layer, signal, name), sums in self.sums.items()
            if name == feature
        }
        candidates = []
        for (layer, signal), r in self.correlations(feature).items():
            if signals is not None and signal not in signals:
                continue
            tokens = counts[layer, signal]
            for unit in np.flatnonzero(np.isfinite(r)):
                candidates.append(
                    UnitPick(feature, layer, signal, int(unit), float(r[unit]), tokens)
                )
        candidates.sort(key=lambda pick: (-abs(pick.r), pick.layer, pick.signal, pick.unit))
        return candidates[:top]
