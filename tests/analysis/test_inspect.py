"""``rnncells inspect RUN_DIR``: the views of a fresh sentiment run, written
where the command says, and refusals of runs it has no views for."""

import dataclasses
import json
import re
from pathlib import Path

import pytest

from keras_rnncells.analysis import sentiment_token_ids
from keras_rnncells.apps.color_namer import ColorNamer
from keras_rnncells.apps.colors import ColorSettings, run_splits
from keras_rnncells.apps.name_to_color import NameToColor
from keras_rnncells.apps.runs import read_model
from keras_rnncells.cli import main
from keras_rnncells.data import load_task
from keras_rnncells.experiments import build_model
from keras_rnncells.text import WordTokenizer

TINY = "--epochs 1 --units 4 --batch-size 32 --limit 256".split()


@pytest.mark.slow  # a real training run first: `pytest -m slow`
def test_inspect_writes_the_views_of_a_fresh_sentiment_run(require_data, tmp_path, capsys):
    require_data("sst2")
    run = tmp_path / "run"
    main(["train", "sentiment", *TINY, "--out", str(run)])
    capsys.readouterr()
    main(["inspect", str(run), "--text", "a <b>gripping</b> film", "--text", "dull"])
    printed = capsys.readouterr().out.splitlines()
    out = run / "inspect"
    listed = {line.strip() for line in printed[1:]}
    assert printed[0] == f"Views of {run} written:"
    assert str(out / "omission.html") in listed and str(out / "omission_tokens.json") in listed
    page = (out / "omission.html").read_text(encoding="utf-8")
    sentences = re.findall(r'<p class="sentence">(.*?)</p>', page)
    _, pieces = sentiment_token_ids(read_model(run), ["a <b>gripping</b> film", "dull"])
    assert [re.findall(r">([^<>]*)</span>", sentence) for sentence in sentences] == pieces
    tokens = json.loads((out / "omission_tokens.json").read_text(encoding="utf-8"))
    assert tokens["encoder"] == "sentiment encoder (sst2)" and tokens["test_texts"] == 1821
    assert tokens["tokens"] and all(entry["count"] >= 5 for entry in tokens["tokens"])
    means = [entry["mean"] for entry in tokens["tokens"]]
    assert means == sorted(means, reverse=True)
    pngs = sorted(out.glob("omission_*.png"))
    if pytest.importorskip("matplotlib", reason="PNGs need the [plot] extra"):
        assert [p.name for p in pngs] == ["omission_1.png", "omission_2.png"]
        assert all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)
        assert {str(p) for p in pngs} <= listed
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left
    assert {str(out / name) for name in ("activations.html", "units.json")} <= listed
    units = json.loads((out / "units.json").read_text(encoding="utf-8"))
    assert {"position", "polarity"} <= set(units)  # SST-2's labels: a polarity unit


@pytest.mark.slow  # a real training run first: `pytest -m slow`
def test_inspect_writes_the_views_of_a_fresh_seq2seq_run(tmp_path, capsys):
    run = tmp_path / "dates"
    main(["train", "seq2seq", *TINY, "--out", str(run)])
    capsys.readouterr()
    main(["inspect", str(run), "--text", "Nov 21, 2026"])
    out = run / "inspect"
    page = (out / "omission.html").read_text(encoding="utf-8")
    sentences = re.findall(r'<p class="sentence">(.*?)</p>', page)
    assert [re.findall(r">([^<>]*)</span>", sentence) for sentence in sentences] == [
        ["␣" if char == " " else char for char in "Nov 21, 2026"]  # spaces shown as ␣
    ]
    tokens = json.loads((out / "omission_tokens.json").read_text(encoding="utf-8"))
    settings = json.loads((run / "results.json").read_text(encoding="utf-8"))["settings"]
    assert tokens["encoder"] == "date encoder"
    assert tokens["test_texts"] == min(settings["test_size"], 2000)
    assert {entry["token"] for entry in tokens["tokens"]} >= set("0123456789")
    saturation = json.loads((out / "saturation.json").read_text(encoding="utf-8"))
    assert {"encoder layer 1 forward", "encoder layer 1 backward", "decoder"} == set(saturation)


UNIT_VIEWS = ("activations.html", "saturation.json", "units.json")


def untrained_run(run_dir, model, results):
    """A run directory as `rnncells train` writes it, of an untrained model."""
    run_dir.mkdir()
    model.save(run_dir / "model.keras")
    (run_dir / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return run_dir


def inspected(run, capsys, *flags):
    """`rnncells inspect RUN` (and flags): the files it says it wrote."""
    capsys.readouterr()
    main(["inspect", str(run), *flags])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"Views of {run} written:"
    listed = {Path(line.strip()) for line in printed[1:] if line.startswith("  ")}
    assert all(path.is_file() and path.parent == run / "inspect" for path in listed)
    return {path.name for path in listed}


def test_inspect_writes_the_unit_views_of_every_kind_of_run(tmp_path, capsys):
    """The color apps (untrained, the shipped color list), a token task and a
    feature task: the views each kind has, the texts coloured are the tokens."""
    settings = dataclasses.asdict(ColorSettings(units=4))
    names = run_splits(ColorSettings(), None)[0].names
    tokenizer = WordTokenizer.from_corpus(names, lowercase=True)
    namer = untrained_run(
        tmp_path / "namer",
        ColorNamer(tokenizer, units=4, embedding_dim=4),
        {"settings": {**settings, "beam_width": 3}},
    )
    files = inspected(namer, capsys, "--text", "sky blue #87ceeb", "--text", "red")
    assert {*UNIT_VIEWS, "saturation.png", "hidden_units.png"} <= files
    page = (namer / "inspect" / "activations.html").read_text(encoding="utf-8")
    texts = re.findall(r'<p class="text">(.*?)</p>', page)
    assert [re.findall(r">([^<>]*)</span>", text) for text in texts[:2]] == [
        ["[START]", "sky", "blue"],
        ["[START]", "red"],
    ]
    units = json.loads((namer / "inspect" / "units.json").read_text(encoding="utf-8"))
    assert units["position"][0]["layer"] == "decoder" and abs(units["position"][0]["r"]) <= 1
    saturation = json.loads((namer / "inspect" / "saturation.json").read_text(encoding="utf-8"))
    assert set(saturation["decoder"]) == {"z", "r"}

    to_color = untrained_run(
        tmp_path / "to_color",
        NameToColor(tokenizer, cell="lstm", units=4, embedding_dim=4),
        {"settings": {**settings, "bins": 16}},
    )
    assert set(UNIT_VIEWS) <= inspected(to_color, capsys)
    saturation = json.loads((to_color / "inspect" / "saturation.json").read_text("utf-8"))
    assert set(saturation["encoder layer 1"]) == {"i", "f", "o"}

    for task, cell, expect in (
        ("logic", "simple", "activations_position.png"),
        ("adding", "mgu", None),
    ):
        task_settings = {"cell": cell, "units": 3, "batch_size": 8, "seed": 0, "limit": 16}
        data = load_task(task, batch_size=8, seed=0, test_size=16, train_size=16)
        model = build_model(data, cell, 3, embedding_dim=3)
        run = untrained_run(tmp_path / task, model, {"task": task, "settings": task_settings})
        files = inspected(run, capsys)
        assert set(UNIT_VIEWS) - {"saturation.json"} <= files
        assert expect is None or expect in files
        page = (run / "inspect" / "activations.html").read_text(encoding="utf-8")
        if cell == "simple":
            assert "(SimpleRNNCell) has no gates" in page and "saturation.json" not in files
        else:
            assert '<p class="text">' not in page  # real-valued steps: no text coloured


def test_inspect_refuses_bad_run_directories_and_texts(tmp_path, capsys):
    run = tmp_path / "logic"
    main([*"train logic --units 2 --epochs 1 --batch-size 4 --limit 8 --out".split(), str(run)])
    files = inspected(run, capsys, "--text", "T F AND")
    assert {"activations.html", "units.json", "hidden_units.png"} <= files
    empty = tmp_path / "empty"
    empty.mkdir()
    for arguments, message in (
        ([str(tmp_path / "nothing")], f"MODEL: {tmp_path / 'nothing'} is not a run directory"),
        ([str(empty)], f"MODEL: {empty} has no results.json"),
        ([str(run), "--text", " "], "--text: an empty text has no token to show"),
        ([str(run), "--text", "T maybe"], "--text: 'maybe' is not a token of task 'logic'"),
    ):
        with pytest.raises(SystemExit):
            main(["inspect", *arguments])
        error = capsys.readouterr().err
        assert error.startswith("rnncells inspect: error: ") and message in error, error
        assert len(error.strip().splitlines()) == 1
