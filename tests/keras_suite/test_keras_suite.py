"""Keras' own tests of its recurrent layers, run against ours.

The test modules ship in the installed Keras wheel
(``keras/src/layers/rnn/*_test.py``); they are imported from there, never
copied. Each refers to the layers as ``layers.GRU``, ``layers.RNN``, ... with
``from keras.src import layers``. While one of their tests runs (and only
then), `keras_layers_substituted` points that module-level name ``layers`` of
every Keras test module at a namespace that is ``keras.src.layers`` with our
classes in place of `SUBSTITUTED`: Keras' test code then builds our GRU,
LSTM, SimpleRNN, RNN and cells, and everything else (``Bidirectional``,
``Input``, ``Layer``) is Keras' own. ``keras.src.layers`` itself is never
touched, so nothing leaks to Keras' internals or to other test files.

Every test of every ``TestCase`` of those modules runs, except `EXCLUDED`
(the one list, with reasons, that README.md in this folder reproduces): those
assert on Keras' private internals or on behaviour that differs by design.
Tests Keras itself skips on the TensorFlow backend (torch-only) stay skipped.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import types
import unittest
from collections.abc import Iterator
from pathlib import Path

import keras
import keras.src.layers
import pytest

import keras_rnncells as krc

pytestmark = pytest.mark.keras_suite

KERAS_TEST_MODULES = (
    "gru_test",
    "lstm_test",
    "simple_rnn_test",
    "rnn_test",
    "bidirectional_test",
    "dropout_rnn_cell_test",
    "stacked_rnn_cells_test",
)
MODULES = {
    name: importlib.import_module(f"keras.src.layers.rnn.{name}") for name in KERAS_TEST_MODULES
}
SUBSTITUTED = ("GRU", "LSTM", "SimpleRNN", "RNN", "GRUCell", "LSTMCell", "SimpleRNNCell")

# "module.Class.test_method" -> why it does not run against our layers.
EXCLUDED = {
    "bidirectional_test.SimpleRNNTest.test_fused_lstm_eligibility": (
        "calls Bidirectional._can_attempt_fused_lstm, a private Keras method that "
        "admits only instances of Keras' own LSTM class (isinstance), for Keras' "
        "fused bidirectional cuDNN kernel; our LSTM runs its own paths "
        "(Bidirectional's outputs are checked in test_differential.py)"
    ),
    "bidirectional_test.SimpleRNNTest.test_fused_gru_eligibility": (
        "calls Bidirectional._can_attempt_fused_gru, a private Keras method that "
        "admits only instances of Keras' own GRU class (isinstance), for Keras' "
        "fused bidirectional cuDNN kernel; our GRU runs its own paths "
        "(Bidirectional's outputs are checked in test_differential.py)"
    ),
    "bidirectional_test.SimpleRNNTest.test_keeps_use_cudnn": (
        "asserts that Bidirectional(SimpleRNN) has no `use_cudnn` attribute: every "
        "layer of ours is one RNN class that takes `use_cudnn` (by design, DESIGN.md), "
        "so ours has it, and Bidirectional copies it as it copies GRU's; the part "
        "on GRU and LSTM is test_differential.py::test_bidirectional_keeps_use_cudnn"
    ),
}


class SubstitutedLayers(types.SimpleNamespace):
    """``keras.src.layers`` with `SUBSTITUTED` names taken from keras_rnncells."""

    def __getattr__(self, name: str):
        return getattr(keras.src.layers, name)


@contextlib.contextmanager
def keras_layers_substituted() -> Iterator[SubstitutedLayers]:
    """Within this context every Keras test module's ``layers`` is ours; after
    it, each is what it was."""
    ours = SubstitutedLayers(**{name: getattr(krc, name) for name in SUBSTITUTED})
    saved = {name: module.layers for name, module in MODULES.items()}
    try:
        for module in MODULES.values():
            module.layers = ours
        yield ours
    finally:
        for name, module in MODULES.items():
            module.layers = saved[name]


def keras_test_classes() -> dict[str, type[unittest.TestCase]]:
    """``module.Class`` -> each TestCase class defined in the Keras modules."""
    return {
        f"{name}.{cls_name}": cls
        for name, module in MODULES.items()
        for cls_name, cls in vars(module).items()
        if isinstance(cls, type)
        and issubclass(cls, unittest.TestCase)
        and cls.__module__ == module.__name__
    }


def keras_test_names() -> set[str]:
    """``module.Class.test_method`` for every test Keras defines there."""
    loader = unittest.TestLoader()
    return {
        f"{key}.{method}"
        for key, cls in keras_test_classes().items()
        for method in loader.getTestCaseNames(cls)
    }


def wrapped(key: str, keras_class: type[unittest.TestCase]) -> type[unittest.TestCase]:
    """A subclass collected here (Keras' class is left as it is): its tests
    run with `keras_layers_substituted`, `EXCLUDED` ones are skipped."""
    namespace = {"__module__": __name__, "keras_test_class": key}
    for method in unittest.TestLoader().getTestCaseNames(keras_class):
        reason = EXCLUDED.get(f"{key}.{method}")
        if reason is not None:
            namespace[method] = unittest.skip(f"excluded: {reason}")(getattr(keras_class, method))
    name = "Keras_" + key.replace(".", "_")
    return type(name, (keras_class,), namespace)


def _collect() -> None:
    for key, keras_class in keras_test_classes().items():
        cls = wrapped(key, keras_class)
        globals()[cls.__name__] = cls


_collect()


@contextlib.contextmanager
def keras_settings_kept() -> Iterator[None]:
    """Keras' ``TestCase.setUp`` clears the session (the global dtype policy
    with it) and turns traceback filtering off for good: both put back after
    each test, for the tests a worker runs next."""
    filtering = keras.config.is_traceback_filtering_enabled()
    policy = keras.config.dtype_policy()
    try:
        yield
    finally:
        keras.config.set_dtype_policy(policy)
        if filtering:
            keras.config.enable_traceback_filtering()
        else:
            keras.config.disable_traceback_filtering()


@pytest.fixture(autouse=True)
def _our_layers(request) -> Iterator[None]:
    if getattr(request.cls, "keras_test_class", None) is None:
        yield
        return
    with keras_settings_kept(), keras_layers_substituted():
        yield


# -- the harness itself ---------------------------------------------------------
def test_the_substitution_holds_inside_its_context_only():
    module = MODULES["gru_test"]
    assert module.layers is keras.src.layers
    with keras_layers_substituted() as ours:
        for name, keras_module in MODULES.items():
            assert keras_module.layers is ours, name
        for name in SUBSTITUTED:
            assert getattr(module.layers, name) is getattr(krc, name)
            assert getattr(module.layers, name) is not getattr(keras.layers, name)
        assert module.layers.Bidirectional is keras.layers.Bidirectional
        layer = module.layers.GRU(2)
        assert isinstance(layer, krc.RNN) and not isinstance(layer, keras.layers.GRU)
    for name, keras_module in MODULES.items():
        assert keras_module.layers is keras.src.layers, name
    assert keras.src.layers.GRU is keras.layers.GRU is not krc.GRU


def test_keras_settings_are_put_back():
    keras.config.enable_traceback_filtering()
    with keras_settings_kept():
        keras.backend.clear_session()
        keras.config.disable_traceback_filtering()
        keras.config.set_dtype_policy("mixed_float16")
    assert keras.config.is_traceback_filtering_enabled()
    assert keras.config.dtype_policy().name == "float32"


def test_every_keras_test_is_collected_and_every_exclusion_names_one():
    names = keras_test_names()
    collected = {
        f"{cls.keras_test_class}.{method}"
        for cls in globals().values()
        if isinstance(cls, type) and hasattr(cls, "keras_test_class")
        for method in unittest.TestLoader().getTestCaseNames(cls)
    }
    assert collected == names
    assert len(names) > 50  # the seven modules hold 57 tests in Keras 3.15
    assert set(EXCLUDED) <= names, f"stale exclusions: {set(EXCLUDED) - names}"
    assert all(len(reason) > 40 for reason in EXCLUDED.values())


def test_readme_lists_exactly_the_exclusions():
    readme = (Path(__file__).parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Keras tests not run against our layers", 1)[1].split("\n## ")[0]
    rows = dict(re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, re.MULTILINE))
    expected = "\n".join(f"| `{name}` | {reason} |" for name, reason in EXCLUDED.items())
    assert rows == EXCLUDED, f"README.md's table should read:\n{expected}"
