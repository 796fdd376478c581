"""The multi-task encoder-decoder (Luong et al. 2016): the mixing schedule,
the classification head against NumPy, alternating steps touching only the
shared encoder and the task's own parts, the `.keras` round trip, the data
and the errors."""

from collections import Counter

import keras
import numpy as np
import pytest

from keras_rnncells.data.multitask_dates import (
    TASKS,
    endless_batches,
    multitask_date_splits,
    task_arrays,
)
from keras_rnncells.seq2seq.multitask import MultiTaskSeq2Seq, fit_tasks, task_schedule


@pytest.fixture(scope="module")
def data():
    return multitask_date_splits(64, 8, seed=3)


@pytest.fixture(scope="module")
def model(data):
    keras.utils.set_random_seed(0)
    size = data["ids"].size
    return MultiTaskSeq2Seq(
        size, {"dates": size, "autoencode": size}, {"month": 12}, units=8, embedding_dim=4
    )


def test_the_schedule_follows_the_ratios():
    order = task_schedule({"dates": 1, "autoencode": 0.5, "month": 0.5}, 40)
    assert Counter(order) == {"dates": 20, "autoencode": 10, "month": 10}
    # every prefix is within one step per task of its share
    for end in range(1, 41):
        counts = Counter(order[:end])
        assert abs(counts["dates"] - end / 2) <= 1 and abs(counts["month"] - end / 4) <= 1
    assert order[:4] == ["dates", "autoencode", "month", "dates"]


def test_the_data_of_each_task(data):
    ids = data["ids"]
    source, month = task_arrays("month", data["train"], ids)
    assert list(month[:3] + 1) == [int(iso[5:7]) for _, iso in data["train"][:3]]
    source, target_in, target_out = task_arrays("autoencode", data["train"], ids)
    assert ids.decode(target_out[0]) == data["train"][0][0]
    assert target_in[0, 0] == 2 and ids.decode(target_in[0, 1:]) == data["train"][0][0]
    _, _, iso = task_arrays("dates", data["train"], ids)
    assert ids.decode(iso[1]) == data["train"][1][1]
    assert ids.decode(source[1]) == data["train"][1][0]


def test_the_classification_head_is_a_softmax_layer_on_the_summary(model, data):
    source, _ = task_arrays("month", data["train"][:4], data["ids"])
    _, summary, _ = model.encoder(source)
    kernel, bias = (w.numpy() for w in model.heads["month"].weights)
    expected = np.asarray(summary) @ kernel + bias
    np.testing.assert_allclose(np.asarray(model(source, task="month")), expected, atol=1e-5)


def test_a_step_on_one_task_moves_the_encoder_and_that_task_only(data):
    keras.utils.set_random_seed(1)
    size = data["ids"].size
    model = MultiTaskSeq2Seq(size, {"dates": size}, {"month": 12}, units=8, embedding_dim=4)

    def values(layer):
        return [w.numpy().copy() for w in layer.trainable_weights]

    parts = {"encoder": model.encoder, "head": model.heads["month"]}
    parts["decoder"] = model.decoders["dates"]
    before = {name: values(layer) for name, layer in parts.items()}
    batches = {"month": endless_batches(task_arrays("month", data["train"], data["ids"]), 8, 0)}
    losses = fit_tasks(model, batches, {"month": 1}, 2)
    assert set(losses) == {"month"} and np.isfinite(losses["month"])

    def moved(name):
        return [not np.array_equal(a, b) for a, b in zip(values(parts[name]), before[name])]

    assert any(moved("encoder")) and all(moved("head"))
    assert not any(moved("decoder"))


def test_keras_round_trip_gives_equal_outputs(model, data, tmp_path):
    ids = data["ids"]
    source, target_in, _ = task_arrays("dates", data["test"], ids)
    path = tmp_path / "multitask.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.tasks == ["dates", "autoencode", "month"]
    for task in ("dates", "autoencode"):
        np.testing.assert_allclose(
            np.asarray(loaded((source, target_in), task=task)),
            np.asarray(model((source, target_in), task=task)),
            atol=1e-6,
        )
    np.testing.assert_allclose(
        np.asarray(loaded(source, task="month")), np.asarray(model(source, task="month")), atol=1e-6
    )
    np.testing.assert_array_equal(
        np.asarray(loaded.generate(source, "dates", 6).tokens),
        np.asarray(model.generate(source, "dates", 6).tokens),
    )


def test_bad_arguments_are_one_line_errors(model):
    with pytest.raises(ValueError, match="Argument `ratios` must map each task to a positive"):
        task_schedule({"dates": 0}, 3)
    with pytest.raises(ValueError, match=r"Argument `class_tasks\['month'\]` must be a positive"):
        MultiTaskSeq2Seq(10, {"dates": 10}, {"month": 0})
    with pytest.raises(ValueError, match="must name at least one task, each once"):
        MultiTaskSeq2Seq(10, {"dates": 10}, {"dates": 3})
    with pytest.raises(ValueError, match="Argument `task` must be one of"):
        model(np.ones((1, 2), "int32"), task="nope")
    with pytest.raises(ValueError, match="must be a sequence task"):
        model.generate(np.ones((1, 2), "int32"), "month")
    with pytest.raises(ValueError, match="Argument `batches` must hold task 'month'"):
        fit_tasks(model, {}, {"month": 1}, 1)
    with pytest.raises(ValueError, match="Argument `task` must be one of"):
        task_arrays("weekday", [], None)
    assert TASKS == ("dates", "autoencode", "month")
