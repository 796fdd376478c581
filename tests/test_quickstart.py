"""`rnncells quickstart` and `rnncells export`: artifacts written, checked, versioned."""

import json

import pytest

from keras_rnncells.cli import main
from keras_rnncells.export import verify_manifest


def test_quickstart_then_export(tmp_path, capsys):
    out = tmp_path / "qs"
    main(["quickstart", "--out", str(out), "--epochs", "1"])
    printed = capsys.readouterr().out
    export = out / "export"
    for model in ("color-namer", "name-to-color"):
        manifest = verify_manifest(export / model / "1")
        assert manifest["format"] == "savedmodel" and manifest["model"] == model
        onnx_manifest = verify_manifest(export / "onnx" / model / "1")
        assert onnx_manifest["format"] == "onnx" and onnx_manifest["opset"] >= 17
        assert str(export / model / "1") in printed
    assert "'dark red' -> (" in printed

    # A second export of the same run gets the next version; an existing one is refused.
    run = out / "runs" / "name-to-color"
    main(["export", str(run), "--out", str(export), "--format", "onnx"])
    assert (export / "onnx" / "name-to-color" / "2" / "model.onnx").is_file()
    assert not (export / "name-to-color" / "2").exists()
    with pytest.raises(SystemExit, match="--overwrite"):
        main(["export", str(run), "--out", str(export), "--version", "1", "--format", "onnx"])
    main(["export", str(run), "--out", str(export), "--version", "1", "--overwrite"])
    parity = json.loads((export / "name-to-color" / "1" / "manifest.json").read_text())["parity"]
    assert parity  # measured at export
    with pytest.raises(SystemExit, match="`format`"):
        main(["export", str(run), "--out", str(export), "--format", "tflite"])
    with pytest.raises(SystemExit, match="`run_dir`"):
        main(["export", str(tmp_path / "nothing"), "--out", str(export)])
