"""``rnncells train multitask``: the flags' errors, the alternating batches
that ``model.fit`` reads, a step touching its task only, the `.keras` round
trip, and (slow) the command end to end and the exports served as TF
Serving and onnxruntime run them."""

import json
from collections import Counter

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps.multitask import (
    MultiTaskSettings,
    TextMultiTask,
    build_multitask,
    multitask_data,
    parse_tasks,
    updates_per_epoch,
)
from keras_rnncells.seq2seq.multitask import MultiTaskSeq2Seq, task_schedule

TEXTS = ["Nov 21, 2026", "saturday 21 november 2026", "11/21/2026", "21.11.2026", ""]
TINY = {"units": 4, "embedding_dim": 4, "train_size": 64, "test_size": 8, "batch_size": 8}


@pytest.fixture(scope="module")
def run():
    """A tiny untrained run: its settings, data and `Fit`."""
    settings = MultiTaskSettings(**TINY, tasks="month,dates,autoencode", ratios="0.5,1,0.5")
    keras.utils.set_random_seed(0)
    data = multitask_data(settings)
    return settings, data, build_multitask(settings, data)


def test_tasks_and_ratios_parse_and_bad_ones_name_their_flag():
    assert parse_tasks("dates, month", "1,0.25") == {"dates": 1.0, "month": 0.25}
    for tasks in ("dates,weekday", "dates,dates", ""):
        with pytest.raises(ValueError, match=r"^Argument `tasks` \(--tasks\) must be distinct"):
            parse_tasks(tasks, "1")
    for ratios in ("1", "1,0", "1,-2", "1,x", "1,inf", "1,2,3"):
        with pytest.raises(ValueError, match=r"^Argument `ratios` \(--ratios\) must be 2 pos"):
            parse_tasks("dates,month", ratios)
    with pytest.raises(ValueError, match=r"--ratios\) must be 3 positive numbers"):
        MultiTaskSettings(ratios="1,1")
    with pytest.raises(ValueError, match="Argument `tokenizer` must be one of"):
        MultiTaskSettings(tokenizer="wordpiece")


def test_an_epoch_alternates_whole_batches_in_the_ratios(run):
    settings, _, fit = run
    model = fit.model
    assert model.tasks == ["dates", "autoencode", "month"]  # sequence tasks first
    schedule = task_schedule(settings.mixing, settings.train_size // settings.batch_size)
    batches = list(fit.train)
    assert [model.tasks[int(b["task"][0])] for b in batches] == schedule
    assert (
        Counter(schedule)
        == updates_per_epoch(settings)
        == {"month": 2, "dates": 4, "autoencode": 2}
    )
    for batch in batches:
        task = model.tasks[int(batch["task"][0])]
        assert np.all(batch["task"].numpy() == batch["task"][0]) and batch["source"].shape[0] == 8
        if task == "month":
            assert (
                set(batch["label"].numpy()) <= set(range(12)) and batch["target_out"].shape[1] == 1
            )
        else:
            assert batch["target_out"].shape[1] > 1 and not np.any(batch["label"].numpy())
    # a second epoch reads each task's examples in a new order
    again = list(fit.train)
    assert not all(np.array_equal(a["source"], b["source"]) for a, b in zip(batches, again))


def test_a_step_of_one_task_moves_the_encoder_and_that_task_only(run):
    _, _, fit = run
    model = fit.model
    month = next(b for b in fit.train if int(b["task"][0]) == model.tasks.index("month"))

    def values(layer):
        return [w.numpy().copy() for w in layer.trainable_weights]

    parts = {
        "encoder": model.multitask.encoder,
        "head": model.multitask.heads["month"],
        "decoder": model.multitask.decoders["dates"],
    }
    before = {name: values(layer) for name, layer in parts.items()}
    logs = model.train_step(month)
    assert np.isfinite(float(logs["month_loss"])) and float(logs["dates_loss"]) == 0.0
    moved = {
        n: [not np.array_equal(a, b) for a, b in zip(values(parts[n]), before[n])] for n in parts
    }
    assert any(moved["encoder"]) and all(moved["head"]) and not any(moved["decoder"])


def test_keras_round_trip_gives_equal_predictions(run, tmp_path):
    model = run[2].model
    path = tmp_path / "multitask.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, TextMultiTask) and loaded.tasks == model.tasks
    texts = tf.constant(TEXTS)
    want, got = model.predict_texts(texts), loaded.predict_texts(texts)
    assert set(want) == {"dates", "dates_score", "autoencode", "autoencode_score", "month",
                         "month_probabilities"}  # fmt: skip
    for name in want:
        np.testing.assert_array_equal(got[name].numpy(), want[name].numpy(), err_msg=name)
    assert set(want["month"].numpy()) <= set(range(1, 13))


def test_predict_tasks_reads_the_source_once_and_matches_each_task(run):
    multitask = run[2].model.multitask
    source = run[2].model.source_tokenizer(tf.constant(TEXTS))
    every = multitask.predict_tasks(source)
    np.testing.assert_allclose(every["month"], multitask(source, task="month"), atol=1e-6)
    np.testing.assert_array_equal(every["dates"].tokens, multitask.generate(source, "dates").tokens)


def test_bad_model_arguments_are_one_line_errors(run):
    _, data, fit = run
    with pytest.raises(ValueError, match="Argument `multitask` has a source vocabulary"):
        TextMultiTask(data.source_tokenizer, {"dates": data.source_tokenizer}, fit.model.multitask)
    with pytest.raises(ValueError, match="Argument `multitask` must be a keras_rnncells"):
        TextMultiTask(data.source_tokenizer, {}, None)
    with pytest.raises(ValueError, match=r"Argument `dates` must be a keras_rnncells\.text"):
        TextMultiTask(data.source_tokenizer, {"dates": "chars"}, fit.model.multitask)
    assert isinstance(fit.model.multitask, MultiTaskSeq2Seq)


@pytest.mark.slow  # trains a tiny run through the command, then resumes nothing
def test_the_command_trains_writes_and_refuses_bad_flags(tmp_path, capsys):
    from keras_rnncells.cli import main

    out = tmp_path / "run"
    args = ["train", "multitask", "--tasks", "dates,month", "--ratios", "1,1", "--units", "4",
            "--epochs", "2", "--limit", "64", "--batch-size", "16", "--out", str(out)]  # fmt: skip
    main(args)
    results = json.loads((out / "results.json").read_text())
    assert results["updates_per_epoch"] == {"dates": 2, "month": 2}
    assert 0 <= results["dates_exact_match"] <= 1 and 0 <= results["month_accuracy"] <= 1
    assert results["settings"]["tasks"] == "dates,month" and (out / "model.keras").exists()
    assert "Held-out" in capsys.readouterr().out
    for flags, flag in ((["--tasks", "weekday"], "--tasks"), (["--ratios", "1,0,1"], "--ratios")):
        with pytest.raises(SystemExit) as exit_info:
            main(["train", "multitask", *flags, "--out", str(tmp_path / "bad")])
        assert exit_info.value.code == 2
        error = capsys.readouterr().err.strip()
        assert flag in error and len(error.splitlines()) == 1
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow  # SavedModel and both ONNX models written and checked, run in children
def test_exports_serve_every_task(run, tmp_path, serve_like_tf_serving, run_onnx_in_child):
    """The SavedModel (strings in, an output per task) served as TF Serving
    does, model.onnx on ids and model_text.onnx on strings in onnxruntime:
    each equals the model."""
    from keras_rnncells.apps.registry import servable_for
    from keras_rnncells.export import write_onnx, write_saved_models

    model = run[2].model
    servable = servable_for(model)
    batches = {"several": TEXTS, "one": TEXTS[:1]}
    expected = {n: model.predict_texts(tf.constant(t)) for n, t in batches.items()}
    (directory,) = write_saved_models([servable], tmp_path / "export")
    served = serve_like_tf_serving(
        [(directory, {"text": texts}) for texts in batches.values()], tmp_path / "serve"
    )
    path = tmp_path / "onnx" / "model.onnx"
    write_onnx(servable, path)
    ids = {n: model.source_tokenizer(tf.constant(t)).numpy() for n, t in batches.items()}
    jobs = [(path, {"token_ids": ids[name]}) for name in batches]
    jobs += [(path.parent / "model_text.onnx", {"text": texts}) for texts in batches.values()]
    ran = run_onnx_in_child(jobs, tmp_path / "run")
    for i, name in enumerate(batches):
        want = {k: v.numpy() for k, v in expected[name].items()}
        for form, got in (("served", served[i]), ("ids", ran[i]), ("text", ran[2 + i])):
            assert isinstance(got, dict), f"{name}, {form}: {got}"
            np.testing.assert_array_equal(got["month"], want["month"], err_msg=f"{name} {form}")
            for score in ("month_probabilities", "dates_score", "autoencode_score"):
                np.testing.assert_allclose(got[score], want[score], atol=1e-4, err_msg=f"{form}")
            for task in ("dates", "autoencode"):
                if form == "ids":
                    texts = model.target_tokenizers[task].detokenize(got[f"{task}_tokens"])
                else:
                    texts = tf.constant(got[task])
                assert [t.decode() for t in texts.numpy()] == [t.decode() for t in want[task]], (
                    f"{name}, {form}, {task}"
                )


@pytest.mark.slow  # converted and checked in LiteRT's interpreter, in a child
def test_the_litert_export_matches_every_task(run, tmp_path):
    """LiteRT's form of the model on ids: the export's own check compares each
    task's output with the model in an interpreter without TensorFlow."""
    import json

    from keras_rnncells.apps.registry import servable_for
    from keras_rnncells.export import write_litert

    directory = write_litert(servable_for(run[2].model), tmp_path / "litert")
    errors = json.loads((directory / "manifest.json").read_text())["parity"]["max_abs_error"]
    assert set(errors) >= {"dates_score", "autoencode_score", "month_probabilities"}
    assert all(np.isfinite(e) and e <= 1e-4 for e in errors.values()), errors
