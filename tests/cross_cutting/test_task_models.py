"""`rnncells train TASK --model ...`: the stacks of other connections
(residual, dense, gated feedback, clockwork) and the tree models (`rnncells
train logic --model treelstm|spinn --shape tree`, and in `rnncells
compare`), as a user runs them; what they refuse."""

from __future__ import annotations

import json
import shlex

import keras
import numpy as np
import pytest

from keras_rnncells.cli import main
from keras_rnncells.data import load_task
from keras_rnncells.data.logic import GATES, VOCABULARY
from keras_rnncells.experiments import train_task

TINY = ["--epochs", "1", "--batch-size", "4", "--limit", "8", "--units", "3"]


def read_results(run_dir) -> dict:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def test_the_task_models_are_the_connections_the_layers_build():
    from keras_rnncells.defaults import STACKS
    from keras_rnncells.layers.stacks import ALL_CONNECTIONS

    assert STACKS == ("rnn", *ALL_CONNECTIONS[1:])  # "rnn" is the plain stack


def test_logic_tasks_know_their_trees():
    task = load_task("logic", train_size=4, validation_size=4, test_size=4, shape="tree")
    assert [VOCABULARY[i] for i in task.reduce_ids] == list(GATES)
    assert not load_task("adding", train_size=4, validation_size=4, test_size=4).reduce_ids


@pytest.mark.slow  # two training runs (23 s of the default run)
def test_train_spinn_on_tree_formulas_then_compare_with_a_cell(tmp_path, capsys):
    compare = tmp_path / "compare"
    out = compare / "spinn-3"  # where `compare` puts its spinn run of 3 units
    main(["train", "logic", "--model", "spinn", "--shape", "tree", *TINY, "--out", str(out)])
    results = read_results(out)
    assert results["cell"] == "spinn" and results["settings"]["model"] == "spinn"
    words = shlex.split(results["command"])
    assert "--cell" not in words
    assert words[words.index("--model") + 1] == "spinn" and "tree" in results["description"]
    assert words[words.index("--shape") + 1] == "tree"
    tree = keras.saving.load_model(out / "model.keras").get_layer("tree")
    assert tree.tracking_units == 3
    assert results["recurrent_parameters"] == sum(int(np.prod(w.shape)) for w in tree.weights)
    # `compare` takes the tree models as it takes cells; the finished spinn-3 is reused.
    main(
        [
            "compare",
            "logic",
            "--cells",
            "spinn,treelstm",
            "--shape",
            "tree",
            *TINY,
            "--out",
            str(compare),
        ]
    )
    comparison = json.loads((compare / "compare.json").read_text(encoding="utf-8"))
    assert [(r["cell"], r["units"]) for r in comparison["runs"]] == [("spinn", 3), ("treelstm", 3)]
    assert comparison["runs"][0]["accuracy"] == results["test_metric"]
    treelstm = read_results(compare / "treelstm-3")
    assert treelstm["settings"]["shape"] == "tree" and treelstm["settings"]["model"] == "treelstm"
    assert "treelstm" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "adding", "--model", "spinn"], "task 'adding' has none"),
        (
            ["train", "logic", "--model", "treelstm", "--cell", "gru"],
            "`cell` applies to model 'rnn'",
        ),
        (
            ["train", "logic", "--model", "spinn", "--layers", "2"],
            "`layers` applies to model 'rnn'",
        ),
        (
            ["train", "adding", "--shape", "tree"],
            "--shape applies to the logic task, not to adding",
        ),
        (["train", "sentiment", "--model", "spinn"], "--model applies to the data tasks"),
        (["train", "adding", "--model", "dense", "--cell", "gru"], "`bidirectional` applies"),
        (["train", "logic", "--model", "clockwork", "--batch-norm"], "`batch_norm` applies"),
        (["train", "logic", "--model", "grid"], "`cell` must be 'lstm' for model 'grid'"),
    ],
    ids=["no-trees", "cell", "layers", "shape", "app", "bidirectional", "batch-norm", "lstm"],
)
def test_what_tree_models_refuse_is_one_line(refused_in_one_line, argv, message):
    refused_in_one_line(argv, message)


def test_shape_from_python_is_checked(tmp_path):
    with pytest.raises(ValueError, match="`shape` applies to the logic task"):
        train_task("adding", tmp_path / "run", shape="tree")
    with pytest.raises(ValueError, match="`model` must be one of"):
        train_task("logic", tmp_path / "run", model="forest")


@pytest.mark.parametrize(
    "model, layer_class",
    [("residual", "StackedRNN"), ("clockwork", "RNN")],
    ids=["residual", "clockwork"],
)
@pytest.mark.slow  # a training run per connection (22 s of the default run)
def test_train_a_stack_of_other_connections(tmp_path, capsys, model, layer_class):
    out = tmp_path / model
    argv = ["train", "logic", "--model", model, "--cell", "mgu", "--layers", "2", *TINY]
    main([*argv, "--out", str(out)])
    results = read_results(out)
    assert results["cell"] == "mgu" and results["settings"]["model"] == model
    assert f"logic, mgu ({model}): test accuracy" in capsys.readouterr().out
    words = shlex.split(results["command"])
    assert words[words.index("--model") + 1] == model and words[words.index("--cell") + 1] == "mgu"
    layer = keras.saving.load_model(out / "model.keras").get_layer("recurrent")
    assert type(layer).__name__ == layer_class
    assert results["recurrent_parameters"] == sum(int(np.prod(w.shape)) for w in layer.weights)


@pytest.mark.slow  # fresh training runs and exports (21 s of the default run)
def test_train_one_cell_per_layer(tmp_path, capsys):
    """The MGU paper's hybrid: a GRU layer under an MGU layer, bottom first."""
    out = tmp_path / "hybrid"
    main(["train", "logic", "--cell", "gru,mgu", "--layers", "2", *TINY, "--out", str(out)])
    results = read_results(out)
    assert results["cell"] == "gru,mgu"
    assert "logic, gru,mgu: test accuracy" in capsys.readouterr().out
    words = shlex.split(results["command"])
    assert words[words.index("--cell") + 1] == "gru,mgu"
    model = keras.saving.load_model(out / "model.keras")
    cells = [type(model.get_layer(f"recurrent_{i}").cell).__name__ for i in (1, 2)]
    assert cells == ["GRUCell", "MGUCell"] and model.name == "logic_gru_mgu"
    # a GRU of 3 units over the m-wide embedding (two biases), then an MGU over its 3 outputs
    m = model.get_layer("embedding").output_dim
    gru, mgu = 3 * (m + 3 + 2) * 3, 2 * (3 + 3 + 1) * 3
    assert results["recurrent_parameters"] == gru + mgu


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cell", "gru,mgu,lstm", "--layers", "2"], "or one per layer (bottom first"),
        (["--cell", "gru,mgu"], "for 1 layers, received 'gru,mgu' (2 cells)"),
        (["--cell", "gru,nope", "--layers", "2"], "unknown cell 'nope'"),
        (["--cell", "gru,mgu", "--layers", "2", "--model", "dense"], "model 'dense' repeats one"),
    ],
    ids=["too-many", "one-layer", "unknown", "dense"],
)
def test_what_one_cell_per_layer_refuses_is_one_line(refused_in_one_line, argv, message):
    refused_in_one_line(["train", "adding", *argv, *TINY], message)
