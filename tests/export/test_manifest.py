"""A truncated or altered artifact is detected through its manifest's checksums,
by `verify_manifest` and by ``rnncells verify``."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from keras_rnncells.export import (
    onnx_path,
    recurrent_layer_servable,
    verify_manifest,
    write_onnx,
    write_saved_model,
)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """One SavedModel and one ONNX version directory of a small GRU layer,
    written without the fresh-process check (the damage is what is tested)."""
    root = tmp_path_factory.mktemp("export")
    servable = recurrent_layer_servable("gru", units=3, input_dim=2)
    saved_model = write_saved_model(servable, root, check=False)
    onnx_file = onnx_path(root, servable.name, 1)
    write_onnx(servable, onnx_file, version=1)
    return {"savedmodel": saved_model, "onnx": onnx_file.parent}


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_last_byte(path: Path) -> None:
    content = bytearray(path.read_bytes())
    content[-1] ^= 0xFF
    path.write_bytes(bytes(content))


TARGETS = {
    "savedmodel": ["saved_model.pb", "variables/variables.index", "variables/variables.data-*"],
    "onnx": ["model.onnx"],
}
CASES = [(fmt, pattern) for fmt, patterns in TARGETS.items() for pattern in patterns]


@pytest.mark.parametrize("damage", [truncate, flip_last_byte], ids=["truncated", "altered"])
@pytest.mark.parametrize(("fmt", "pattern"), CASES, ids=[f"{f}:{p}" for f, p in CASES])
def test_damage_is_detected(artifacts, fmt, pattern, damage, tmp_path):
    copy = shutil.copytree(artifacts[fmt], tmp_path / "1")
    verify_manifest(copy)  # intact
    target = next(copy.glob(pattern))
    damage(target)
    name = target.relative_to(copy).as_posix()
    with pytest.raises(ValueError, match=rf"{name} does not match its checksum"):
        verify_manifest(copy)


def test_missing_unlisted_and_broken_manifest(artifacts, tmp_path):
    copy = shutil.copytree(artifacts["onnx"], tmp_path / "1")
    (copy / "extra.txt").write_text("not exported\n")
    with pytest.raises(ValueError, match=r"extra\.txt is not listed"):
        verify_manifest(copy)
    (copy / "extra.txt").unlink()
    (copy / "model.onnx").unlink()
    with pytest.raises(ValueError, match=r"model\.onnx is listed in manifest\.json but missing"):
        verify_manifest(copy)
    truncate(copy / "manifest.json")
    with pytest.raises(ValueError, match=r"not valid JSON \(truncated or altered\)"):
        verify_manifest(copy)


def test_the_verify_command(artifacts, tmp_path):
    def verify(*directories: Path) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "keras_rnncells.cli", "verify", *map(str, directories)]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    intact = verify(artifacts["savedmodel"], artifacts["onnx"])
    assert intact.returncode == 0, intact.stderr
    assert intact.stdout.count("files match manifest.json") == 2
    copy = shutil.copytree(artifacts["savedmodel"], tmp_path / "1")
    truncate(copy / "saved_model.pb")
    damaged = verify(copy)
    assert damaged.returncode == 2  # an anticipated error: one line, exit 2
    assert "saved_model.pb does not match its checksum" in damaged.stderr
    assert "Traceback" not in damaged.stderr
