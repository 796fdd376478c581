"""Interpretable units: token features, Pearson r summed batch by batch, and the
search finding a unit built to count positions."""

import keras
import numpy as np

from keras_rnncells import RNN
from keras_rnncells.analysis.activations import CorrelationTally, token_features
from keras_rnncells.analysis.recording import recorded_recurrences
from keras_rnncells.cells.registry import get_cell


def test_token_features():
    features = token_features('a ( b " c " ) d <eos> e'.split(), label=1)
    assert features["position"].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 0]
    assert features["bracket"].tolist() == [0, 1, 1, 2, 2, 2, 1, 0, 0, 0]
    assert features["polarity"].tolist() == [1.0] * 10
    assert "polarity" not in token_features(["a"])


def test_correlations_summed_in_batches_equal_numpy():
    rng = np.random.default_rng(0)
    activations = rng.normal(size=(50, 3))
    feature = activations[:, 1] * 2 + rng.normal(size=50) * 0.1
    tally = CorrelationTally()
    tally.add("layer", "h", activations[:20], {"position": feature[:20]})
    tally.add("layer", "h", activations[20:], {"position": feature[20:]})
    r = tally.correlations("position")["layer", "h"]
    expected = [np.corrcoef(activations[:, k], feature)[0, 1] for k in range(3)]
    np.testing.assert_allclose(r, expected, atol=1e-10)
    best = tally.ranked("position", top=2)
    assert [pick.unit for pick in best][:1] == [1] and len(best) == 2


def test_the_search_finds_the_unit_built_to_count_positions():
    """Unit 2 of a SimpleRNN adds a constant input to itself every step (an
    integrator): its activation grows with the position; the others see noise."""
    units = 4
    cell = get_cell("simple")(units, activation="linear")
    layer = RNN(cell, return_sequences=True)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 12, 3)).astype("float32")
    x[..., 0] = 1.0  # a constant input feature
    layer(x)
    kernel = rng.normal(size=(3, units)) * 0.5
    kernel[:, 2] = [0.1, 0.0, 0.0]
    recurrent = np.zeros((units, units))
    recurrent[2, 2] = 1.0
    cell.kernel.assign(kernel)
    cell.recurrent_kernel.assign(recurrent)
    model = keras.Sequential([keras.Input((None, 3)), layer])
    with recorded_recurrences() as records:
        model(x)
    tally = CorrelationTally()
    positions = np.tile(np.arange(12.0), 8)
    tally.add("layer", "h", records[0].signals["h"].reshape(-1, units), {"position": positions})
    best = tally.ranked("position")[0]
    assert (best.unit, best.signal) == (2, "h") and best.r > 0.99
