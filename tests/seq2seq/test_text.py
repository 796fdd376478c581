"""TextSeq2Seq: strings in, strings out, saved with its vocabularies; the
date normalizer and `rnncells train seq2seq`."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.cli import main
from keras_rnncells.data.dates import FORMATS, date_pairs, date_splits
from keras_rnncells.seq2seq import TextSeq2Seq
from keras_rnncells.text import END_ID, PAD_ID, START_ID, CharTokenizer


@pytest.fixture(scope="module")
def model():
    return TextSeq2Seq.from_tokenizers(
        CharTokenizer.from_corpus(["abc", "hello"]),
        CharTokenizer.from_corpus(["0123456789-"]),
        cell="gru",
        units=6,
        embedding_dim=4,
        max_output_length=7,
    )


def test_examples_shift_the_target(model):
    (source, target_in), target_out = model.examples(
        tf.constant(["abc", "a"]), tf.constant(["12", "3"])
    )
    assert source.shape == (2, 3)
    np.testing.assert_array_equal(target_in[:, 0], [START_ID, START_ID])
    np.testing.assert_array_equal(
        target_out[1], [model.target_tokenizer(tf.constant(["3"]))[0, 0], END_ID, PAD_ID]
    )
    np.testing.assert_array_equal(
        target_in[:, 1:],
        np.asarray(target_out)[:, :-1] * (np.asarray(target_out)[:, :-1] != END_ID),
    )


def test_odd_inputs_have_documented_results(model):
    """Empty, unknown characters and sources longer than any in training all
    decode to strings of at most max_output_length characters."""
    texts = tf.constant(["", "zzz ??", "hello " * 40, "abc"])
    for width in (1, 3):
        outputs, scores = model.translate(texts, beam_width=width)
        assert outputs.shape == (4,) and np.all(np.isfinite(scores))
        assert all(len(o.decode()) <= 7 for o in outputs.numpy())
    unknown = model.source_tokenizer(tf.constant(["zzz"]))
    np.testing.assert_array_equal(unknown, [[1, 1, 1]])  # [UNK]


def test_saved_with_its_vocabularies(model, tmp_path):
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.source_tokenizer.vocabulary == model.source_tokenizer.vocabulary
    assert loaded.target_tokenizer.vocabulary == model.target_tokenizer.vocabulary
    texts = tf.constant(["abc", "hello"])
    np.testing.assert_array_equal(loaded.translate(texts, 2)[0], model.translate(texts, 2)[0])


def test_mismatched_vocabulary_is_refused(model):
    with pytest.raises(ValueError, match="`seq2seq`"):
        TextSeq2Seq(model.target_tokenizer, model.source_tokenizer, model.seq2seq)
    with pytest.raises(ValueError, match="`source_tokenizer`"):
        TextSeq2Seq("abc", model.target_tokenizer, model.seq2seq)


def test_dates_are_distinct_and_correct():
    splits = date_splits(train=300, validation=50, test=100, seed=3)
    seen = {target for _, target in splits["train"] + splits["validation"]}
    assert not seen & {target for _, target in splits["test"]}
    for source, target in date_pairs(200, seed=4):
        year, _, day = target.split("-")
        assert year in source and (str(int(day)) in source)
    assert date_pairs(5, seed=1) == date_pairs(5, seed=1)
    assert len(FORMATS) >= 10
    with pytest.raises(ValueError, match="`count`"):
        date_pairs(0)


def test_typos_change_letters_only_and_keep_the_targets():
    clean = date_splits(train=300, test=100, seed=3)
    noisy = date_splits(train=300, test=100, seed=3, typos=0.3)
    assert date_splits(train=300, test=100, seed=3, typos=0.3) == noisy  # reproducible
    changed = 0
    for split in ("train", "test"):
        for (source, target), (typed, same_target) in zip(clean[split], noisy[split]):
            assert target == same_target
            assert [c for c in typed if not c.isalpha()] == [c for c in source if not c.isalpha()]
            changed += typed != source
    assert 0.5 * 400 < changed < 400  # most sources, not all (the numeric forms have no letter)


@pytest.mark.slow  # a fresh training run (30 s of the default run)
def test_train_command(tmp_path, capsys):
    out = tmp_path / "run"
    arguments = [
        "train",
        "seq2seq",
        "--out",
        str(out),
        "--epochs",
        "1",
        "--units",
        "8",
        "--limit",
        "256",
    ]
    main(arguments)
    results = json.loads((out / "results.json").read_text())
    assert 0.0 <= results["exact_match_greedy"] <= 1.0
    assert results["settings"]["units"] == 8 and results["settings"]["train_size"] == 256
    assert len(results["seconds_per_epoch"]) == 1
    loaded = keras.saving.load_model(out / "model.keras")
    outputs, _ = loaded.translate(tf.constant(["Nov 21, 2026"]))
    assert outputs.shape == (1,)
    assert (out / "source_vocabulary.txt").read_text().splitlines()[:4] == [
        "[PAD]",
        "[UNK]",
        "[START]",
        "[END]",
    ]
    assert "exact match" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--overwrite"):
        main(arguments)
    with pytest.raises(SystemExit):
        main(["train", "seq2seq", "--out", str(out), "--cell", "no_such_cell"])


@pytest.mark.slow  # the text seq2seq exported both ways (34 s of the default run)
def test_exports_to_both_formats(model, tmp_path):
    from keras_rnncells.apps import servable_for
    from keras_rnncells.export import verify_manifest
    from keras_rnncells.export.command import export_servable

    paths = export_servable(servable_for(model), tmp_path)
    assert verify_manifest(paths["savedmodel"])["parity"]
    onnx = verify_manifest(paths["onnx"].parent)
    assert onnx["parity"]["max_abs_error"]["tokens"] == 0.0
