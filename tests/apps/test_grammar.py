"""`rnncells train rnng`: the model with its labels (trees in, joint
log-probabilities out), its `.keras` round trip, its servable's outputs, bad
settings, and a tiny run that resumes."""

import math

import keras
import numpy as np
import pytest

from keras_rnncells.apps import servable_for
from keras_rnncells.apps.grammar import (
    LOGIC_SPACE,
    GrammarModel,
    GrammarSettings,
    count_words,
    padded_actions,
    perplexities,
    train_grammar,
)

TREES = [("AND", "T", "F"), ("OR", ("XOR", "F", "T"), "T")]


def tiny_model() -> GrammarModel:
    keras.utils.set_random_seed(0)
    return GrammarModel(LOGIC_SPACE.nonterminals, LOGIC_SPACE.terminals, units=4, embedding_dim=3)


def test_the_model_scores_trees_and_round_trips(tmp_path):
    model = tiny_model()
    scores = model.log_probability(TREES)
    steps = model(padded_actions(LOGIC_SPACE, TREES)).numpy()
    np.testing.assert_allclose(scores, steps.sum(-1), atol=1e-6)
    assert (scores < 0).all()
    model.save(tmp_path / "rnng.keras")
    loaded = keras.saving.load_model(tmp_path / "rnng.keras")
    assert isinstance(loaded, GrammarModel) and loaded.space == model.space
    np.testing.assert_allclose(loaded.log_probability(TREES), scores, atol=1e-6)


def test_the_servable_gives_each_rows_joint_log_probability():
    model = tiny_model()
    servable = servable_for(model)
    assert servable.name == "rnng"
    actions = padded_actions(LOGIC_SPACE, TREES)
    served = servable.serve(actions=actions)
    np.testing.assert_allclose(served["log_probability"], model.log_probability(TREES), atol=1e-5)
    assert served["log_probabilities"].shape == actions.shape
    for row in servable.examples["actions"]:
        LOGIC_SPACE.tree(row)  # each example row is a tree


def test_perplexities_count_actions_and_words():
    trees = TREES
    actions = sum(len(LOGIC_SPACE.actions(t)) for t in trees)  # 4 + 7
    assert (actions, sum(map(count_words, trees))) == (11, 5)
    got = perplexities(-11.0, trees)
    assert got["per_action"] == pytest.approx(math.e)
    assert got["per_word"] == pytest.approx(math.exp(11 / 5))


def test_bad_settings_name_themselves():
    with pytest.raises(ValueError, match="Argument `units` must be a positive integer"):
        GrammarSettings(units=0)
    with pytest.raises(ValueError, match="Argument `test_size` must be a positive integer"):
        GrammarSettings(test_size=0)


@pytest.mark.slow  # trains a tiny RNNG twice over (the second run resumes)
def test_a_tiny_run_trains_and_resumes(tmp_path):
    settings = GrammarSettings(
        units=4, embedding_dim=3, epochs=1, train_size=32, validation_size=16, test_size=16
    )
    results = train_grammar(tmp_path / "run", settings, verbose=0)
    for split in ("validation", "test"):
        assert (
            1 < results[f"{split}_perplexity_per_action"] < results[f"{split}_perplexity_per_word"]
        )
    assert (tmp_path / "run" / "model.keras").exists()
    again = train_grammar(tmp_path / "run", settings, verbose=0)
    assert again["validation_perplexity_per_action"] == results["validation_perplexity_per_action"]


@pytest.mark.slow  # exported both ways, run in two child processes
def test_the_app_serves_and_runs_in_onnxruntime(tmp_path, serve_like_tf_serving, run_onnx_in_child):
    from keras_rnncells.export import write_onnx, write_saved_models

    model = tiny_model()
    servable = servable_for(model)
    request = {"actions": padded_actions(LOGIC_SPACE, TREES)}
    expected = model.log_probability(TREES)
    (directory,) = write_saved_models([servable], tmp_path / "export")
    served = serve_like_tf_serving([(directory, request)], tmp_path / "serve")
    np.testing.assert_allclose(served[0]["log_probability"], expected, atol=1e-5)
    write_onnx(servable, tmp_path / "rnng.onnx")
    ran = run_onnx_in_child([(tmp_path / "rnng.onnx", request)], tmp_path / "run")
    np.testing.assert_allclose(ran[0]["log_probability"], expected, atol=1e-4)
