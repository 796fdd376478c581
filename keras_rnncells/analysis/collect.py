"""A run's recurrent layers recorded over its held-out rows, and over the rows shown.

`held_out_statistics` runs the forward pass of every held-out `Batch` of a
`RunSource` with the recurrences recorded
(`keras_rnncells.analysis.recording`) and keeps sums only: the gate
saturation counts (`SaturationTally`) and the correlation sums of every unit
with the token features (`CorrelationTally`). `shown_signals` keeps the
activations of the rows shown one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from keras_rnncells.analysis.activations import CorrelationTally, token_features
from keras_rnncells.analysis.recording import LayerRecord, recorded_recurrences
from keras_rnncells.analysis.saturation import SaturationTally
from keras_rnncells.analysis.sources import Batch, RunSource, Stream

__all__ = ["LayerInfo", "Statistics", "held_out_statistics", "shown_signals"]


@dataclass
class LayerInfo:
    """A recorded layer: its display name, the stream it reads, its cell's
    class name and its gates' labels (empty: a cell without gates)."""

    name: str
    stream: str
    cell: str
    gates: tuple[str, ...]


@dataclass
class Statistics:
    layers: dict[str, LayerInfo] = field(default_factory=dict)
    correlations: CorrelationTally = field(default_factory=CorrelationTally)
    saturation: SaturationTally = field(default_factory=SaturationTally)
    rows: int = 0


def stream_features(stream: Stream) -> dict[str, np.ndarray]:
    """The token features (`token_features`) of every valid step of the
    stream, rows one after the other; real-valued steps: their position."""
    if stream.tokens is None:
        features = {"position": np.nonzero(stream.mask)[1].astype(np.float64)}
        if stream.labels is not None:
            rows = np.nonzero(stream.mask)[0]
            features["polarity"] = np.asarray(stream.labels, np.float64)[rows]
        return features
    labels = [None] * len(stream.tokens) if stream.labels is None else stream.labels
    per_row = [token_features(tokens, label) for tokens, label in zip(stream.tokens, labels)]
    return {name: np.concatenate([row[name] for row in per_row]) for name in per_row[0]}


def recorded(source: RunSource, batch: Batch) -> list[tuple[LayerInfo, LayerRecord]]:
    """The forward pass of ``batch``, recorded: each layer's info and record."""
    with recorded_recurrences() as records:
        batch.run()
    found = []
    for record in records:
        name, stream = source.layers.get(id(record.layer), (record.layer.name, ""))
        if stream not in batch.streams:
            continue  # a recurrence the views do not cover
        gates = tuple(signal for signal in record.signals if signal != "h")
        found.append((LayerInfo(name, stream, record.cell, gates), record))
    return found


def held_out_statistics(source: RunSource) -> Statistics:
    """The saturation counts and correlation sums over ``source.corpus()``."""
    statistics = Statistics()
    for batch in source.corpus():
        features = {name: stream_features(s) for name, s in batch.streams.items()}
        statistics.rows += len(next(iter(batch.streams.values())).mask)
        for info, record in recorded(source, batch):
            statistics.layers.setdefault(info.name, info)
            mask = batch.streams[info.stream].mask
            for signal, values in record.signals.items():
                if signal != "h":
                    statistics.saturation.add(info.name, signal, values, mask)
                statistics.correlations.add(info.name, signal, values[mask], features[info.stream])
    return statistics


def shown_signals(
    source: RunSource, batch: Batch
) -> dict[str, tuple[LayerInfo, dict[str, list[np.ndarray]], Stream]]:
    """Per layer name: its info, each signal's activations per shown row
    (``(valid steps, units)``) and the stream it reads."""
    shown: dict[str, Any] = {}
    for info, record in recorded(source, batch):
        stream = batch.streams[info.stream]
        signals = {
            signal: [row[valid] for row, valid in zip(values, stream.mask)]
            for signal, values in record.signals.items()
        }
        shown[info.name] = (info, signals, stream)
    return shown
