"""The task registry, the data folder, and every task plugged into ``model.fit``."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import pytest

import keras_rnncells
from keras_rnncells import GRU
from keras_rnncells.data import (
    Task,
    data_file,
    data_root,
    get_task,
    list_tasks,
    load_task,
    register_task,
    task_options,
)
from keras_rnncells.data.paths import ENV_VAR, default_roots

GENERATED = {"train_size": 8, "validation_size": 4, "test_size": 4}
# Each task at a tiny size: (data folder or None, options).
SMOKE = {
    "adding": (None, GENERATED),
    "logic": (None, GENERATED),
    "anbn": (None, {**GENERATED, "max_train_n": 4, "test_n": (5, 6)}),
    "anbncn": (None, {**GENERATED, "max_train_n": 4, "test_n": (5, 6)}),
    "mnist_rows": ("mnist", {"limit": 8}),
    "mnist_pixels": ("mnist", {"limit": 8}),
    "imdb": ("imdb", {"limit": 8, "max_length": 12}),
    "sst2": ("sst2", {"limit": 8}),
    "sst1": ("sst2", {"limit": 8}),
    "ptb": ("ptb", {"limit": 200, "sequence_length": 6}),
    "ptb_chars": ("ptb", {"limit": 400, "sequence_length": 6}),
    "imdb_lm": ("imdb", {"limit": 200, "sequence_length": 6, "max_vocabulary": 100}),
}
LOSSES = {
    "regression": "mse",
    "binary": keras.losses.BinaryCrossentropy(from_logits=True),
    "classification": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    "language_model": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
}


def test_registry_lists_every_task_and_rejects_unknown_names():
    assert list_tasks() == sorted(SMOKE)
    assert get_task("adding") is keras_rnncells.data.synthetic.adding
    with pytest.raises(ValueError, match="`name` must be one of"):
        get_task("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_task("adding")(lambda **options: None)
    with pytest.raises(ValueError, match="unknown: \\['steps'\\]"):
        load_task("logic", steps=5)
    for name in list_tasks():
        assert {"batch_size", "seed", "root"} <= set(task_options(name)), name


def test_task_checks_its_fields():
    dataset = load_task("adding", **GENERATED).test
    splits = {"train": dataset, "validation": dataset, "test": dataset}
    with pytest.raises(ValueError, match="`kind`"):
        Task("t", "ranking", **splits, num_classes=0, description="", input_dim=1)
    with pytest.raises(ValueError, match="`input_dim` and `vocabulary_size`"):
        Task("t", "binary", **splits, num_classes=2, description="", input_dim=1, vocabulary_size=3)
    with pytest.raises(ValueError, match="`vocabulary`"):
        Task(
            "t",
            "binary",
            **splits,
            num_classes=2,
            description="",
            vocabulary_size=3,
            vocabulary=("<pad>", "a"),
        )


def test_data_root_order_and_missing_paths(tmp_path, monkeypatch):
    missing = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=f"{missing}.*{ENV_VAR}"):
        data_root(missing)
    assert data_root(tmp_path) == tmp_path
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert data_root() == tmp_path
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'ptb' / 'ptb.train.txt.gz'}"):
        data_file("ptb", "ptb.train.txt.gz")
    with pytest.raises(FileNotFoundError, match=ENV_VAR):
        load_task("ptb")
    # Without the variable: ../shared/data from the working directory first.
    monkeypatch.delenv(ENV_VAR)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert data_root().resolve() == (tmp_path / "shared" / "data").resolve()
    # Then shared/data next to the package's checkout.
    monkeypatch.chdir(tmp_path)
    beside_checkout = Path(keras_rnncells.__file__).resolve().parents[1].parent / "shared" / "data"
    if beside_checkout.is_dir():
        assert data_root() == beside_checkout
    else:
        with pytest.raises(FileNotFoundError, match=str(beside_checkout)):
            data_root()


def test_require_data_skips_outside_ci_and_fails_in_ci(require_data, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"mnist/ absent.*{tmp_path}"):
        require_data("mnist")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true"):
        require_data("mnist")
    (tmp_path / "mnist").mkdir()
    assert require_data("mnist") == tmp_path / "mnist"


def tiny_model(task: Task) -> keras.Model:
    """Embedding (token tasks) -> keras_rnncells.GRU(4) -> Dense(output_units).

    The generic path without XLA: compiled, every batch shape (one per
    bucket) would cost seconds; tests/layers checks the paths agree."""
    if task.vocabulary_size:
        inputs = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(task.vocabulary_size, 3, mask_zero=True)(inputs)
    else:
        inputs = x = keras.Input((None, task.input_dim))
    x = GRU(4, return_sequences=task.kind == "language_model", implementation="generic")(x)
    model = keras.Model(inputs, keras.layers.Dense(task.output_units)(x))
    model.compile(optimizer="adam", loss=LOSSES[task.kind], jit_compile=False)
    return model


@pytest.mark.parametrize(
    "name",
    # IMDB's corpus in the slow run, which CI runs too (25 s of the default run)
    [pytest.param(n, marks=pytest.mark.slow) if "imdb" in n else n for n in sorted(SMOKE)],
)
def test_every_task_trains_a_tiny_model(name, require_data):
    folder, options = SMOKE[name]
    if folder:
        require_data(folder)
    task = load_task(name, batch_size=4, seed=0, **options)
    assert task.name == name and task.description
    keras.utils.set_random_seed(0)
    history = tiny_model(task).fit(
        task.train, validation_data=task.validation, epochs=1, shuffle=False, verbose=0
    )
    assert np.isfinite(history.history["loss"][0]), history.history
    assert np.isfinite(history.history["val_loss"][0]), history.history


def test_default_roots_name_a_folder_once(monkeypatch):
    """From the checkout's root, ../shared/data and the folder beside the
    checkout are one: it is tried, and named in the error, once."""
    checkout = Path(keras_rnncells.__file__).resolve().parents[1]
    monkeypatch.chdir(checkout)
    assert default_roots() == [checkout.parent / "shared" / "data"]
