"""The adding problem, MGU against GRU: the job behind ``rnncells demo``.

The adding problem in the variant of Le, Jaitly & Hinton (2015), "A simple
way to initialize recurrent networks of rectified linear units", at a fixed
length (`keras_rnncells.data.synthetic.adding_problem`): each input is a
sequence of ``steps`` pairs (value drawn uniformly from [0, 1], marker);
exactly two markers are 1, one in each half of the sequence, and the target is
the sum of the two marked values. Predicting the mean scores the variance of
that sum, 2/12 ~ 0.167; a recurrent net has to remember the marked values to
do better.
"""

from __future__ import annotations

from dataclasses import dataclass

import keras
import numpy as np

from keras_rnncells.checks import check_positive_int
from keras_rnncells.data.synthetic import adding_problem
from keras_rnncells.layers import GRU, MGU, CellLayer
from keras_rnncells.training import EpochTimes

STEPS = 50


@dataclass
class Result:
    """One trained model of the demo."""

    cell: str
    parameters: int
    seconds_per_epoch: float
    test_mse: float


def train(
    layer_class: type[CellLayer],
    units: int,
    data: tuple[np.ndarray, ...],
    epochs: int,
    seed: int,
    verbose: int | str = "auto",
) -> Result:
    """Train ``layer_class(units) -> Dense(1)`` on the adding problem (Adam, MSE)."""
    x_train, y_train, x_test, y_test = data
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input(x_train.shape[1:]), layer_class(units), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    if verbose:
        print(f"{layer_class.__name__}({units}), {model.count_params()} parameters:")
    timer = EpochTimes()
    model.fit(x_train, y_train, batch_size=32, epochs=epochs, callbacks=[timer], verbose=verbose)
    test_mse = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    return Result(
        cell=layer_class.__name__,
        parameters=model.count_params(),
        seconds_per_epoch=float(np.median(timer.seconds)),
        test_mse=float(test_mse),
    )


def run_demo(
    units: int,
    epochs: int,
    samples: int,
    seed: int,
    steps: int = STEPS,
    verbose: int | str = "auto",
) -> tuple[list[Result], float]:
    """Train MGU and GRU on the adding problem.

    ``samples`` training sequences, a quarter as many test sequences. Returns
    the results and the baseline test MSE (predicting the training mean).
    """
    check_positive_int("units", units)
    check_positive_int("epochs", epochs)
    x_train, y_train = adding_problem(samples, steps, seed)
    x_test, y_test = adding_problem(max(samples // 4, 1), steps, seed + 1)
    baseline = float(np.mean((y_test - y_train.mean()) ** 2))
    data = (x_train, y_train, x_test, y_test)
    results = [train(layer, units, data, epochs, seed, verbose) for layer in (MGU, GRU)]
    return results, baseline
