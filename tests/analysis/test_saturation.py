"""Gate saturation (Karpathy, Johnson & Fei-Fei 2015): fractions of valid steps
below 0.1 and above 0.9, against a direct count, batch by batch, and drawn."""

import numpy as np
import pytest

from keras_rnncells.analysis.saturation import (
    SaturationTally,
    saturation_fractions,
    saturation_png,
)


def test_fractions_equal_a_direct_count_over_the_valid_steps():
    rng = np.random.default_rng(1)
    gates = rng.uniform(size=(4, 7, 3))
    gates[0, 0] = [0.1, 0.9, 0.05]  # at the thresholds: not saturated
    mask = rng.uniform(size=(4, 7)) < 0.7
    result = saturation_fractions(gates, mask)
    for unit in range(3):
        values = [gates[b, t, unit] for b in range(4) for t in range(7) if mask[b, t]]
        assert result.steps == len(values)
        assert result.left[unit] == sum(v < 0.1 for v in values) / len(values)
        assert result.right[unit] == sum(v > 0.9 for v in values) / len(values)
    # Added in two batches, the same fractions.
    tally = SaturationTally()
    tally.add("layer", "z", gates[:2], mask[:2])
    tally.add("layer", "z", gates[2:], mask[2:])
    both = tally.fractions()["layer"]["z"]
    np.testing.assert_array_equal(both.left, result.left)
    np.testing.assert_array_equal(both.right, result.right)
    with pytest.raises(ValueError, match="Argument `mask` must be"):
        tally.add("layer", "z", gates, mask[:, :3])


def test_the_scatter_is_written(tmp_path):
    pytest.importorskip("matplotlib", reason="PNGs need the [plot] extra")
    tally = SaturationTally()
    rng = np.random.default_rng(2)
    for layer in ("layer 1", "layer 2"):
        for gate in ("i", "f", "o"):
            tally.add(layer, gate, rng.uniform(size=(2, 5, 4)))
    path = saturation_png(tally.fractions(), tmp_path / "s.png", "title", ["note"])
    assert path.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="no gate"):
        saturation_png({"layer": {}}, tmp_path / "none.png", "title")
