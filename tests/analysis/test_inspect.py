"""``rnncells inspect RUN_DIR``: the views of a fresh sentiment run, written
where the command says, and refusals of runs it has no views for."""

import json
import re

import pytest

from keras_rnncells.analysis import sentiment_token_ids
from keras_rnncells.apps.runs import read_model
from keras_rnncells.cli import main

TINY = "--epochs 1 --units 4 --batch-size 32 --limit 256".split()


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


def test_inspect_refuses_what_it_has_no_views_for(tmp_path, capsys):
    run = tmp_path / "logic"
    main([*"train logic --units 2 --epochs 1 --batch-size 4 --limit 8 --out".split(), str(run)])
    capsys.readouterr()
    for target, message in (
        (run, "has views for sentiment and seq2seq runs only so far"),
        (tmp_path / "nothing", "is not a run directory"),
    ):
        with pytest.raises(SystemExit):
            main(["inspect", str(target)])
        error = capsys.readouterr().err
        assert error.startswith(f"rnncells inspect: error: MODEL: {target}") and message in error
        assert len(error.strip().splitlines()) == 1
    assert not (run / "inspect").exists()
