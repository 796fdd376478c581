"""A truncated or altered artifact is detected through its manifest's checksums,
by `verify_manifest` and by ``rnncells verify``; so are symbolic links,
special files and unlisted directories; and, with a key, a manifest
rewritten to match altered files."""

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from keras_rnncells.cli import main
from keras_rnncells.export import (
    onnx_path,
    recurrent_layer_servable,
    verify_manifest,
    write_onnx,
    write_saved_model,
)
from keras_rnncells.export.command import export_servable
from keras_rnncells.export.manifest import MANIFEST, SIGNATURE, sha256, sign_manifest

KEY = b"0123456789abcdef0123456789abcdef"


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


def rehash(directory: Path) -> None:
    """What someone able to write ``directory`` can do: alter a file, then
    rewrite the manifest's checksums to match."""
    target = directory / "saved_model.pb"
    flip_last_byte(target)
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    manifest["files"]["saved_model.pb"] = sha256(target)
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def test_a_rehashed_manifest_is_caught_by_its_signature_only(artifacts, tmp_path):
    copy = shutil.copytree(artifacts["savedmodel"], tmp_path / "1")
    assert sorted(json.loads((copy / MANIFEST).read_text())["directories"]) == [
        "assets",
        "variables",
    ]
    with pytest.raises(ValueError, match=r"manifest\.json is not signed"):
        verify_manifest(copy, KEY)
    sign_manifest(copy, KEY)
    assert (copy / SIGNATURE).read_text().startswith("hmac-sha256 ")
    verify_manifest(copy, KEY)
    verify_manifest(copy)  # the signature is neither listed nor refused
    with pytest.raises(ValueError, match=r"does not match manifest\.json under this key"):
        verify_manifest(copy, b"another key of sixteen bytes or more")
    with pytest.raises(ValueError, match=r"`key` must be at least 16 bytes"):
        verify_manifest(copy, b"short")
    rehash(copy)
    verify_manifest(copy)  # undetectable without a key, as documented
    with pytest.raises(ValueError, match=r"manifest\.json\.hmac does not match manifest\.json"):
        verify_manifest(copy, KEY)


def make_socket(path: Path) -> None:
    """A Unix socket at ``path``, bound by its relative name (a socket's
    path may not exceed about 100 characters)."""
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path.name)
    finally:
        os.chdir(cwd)


def make_device(path: Path) -> None:
    """A character device at ``path`` (the numbers of /dev/null); creating one
    needs a privilege that not every test machine grants."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node is not permitted here")


def replace_by_link_to_copy(path: Path) -> None:
    """The file replaced by a symbolic link to an identical copy elsewhere."""
    outside = path.parent.parent.parent / f"outside-{path.name}"
    shutil.copyfile(path, outside)
    path.unlink()
    path.symlink_to(outside)


# What is planted in a version directory, and the sentence that reports it.
PLANTED = {
    "link-to-a-file": (
        lambda d: (d / "variables" / "extra").symlink_to("/etc/hostname"),
        r"variables/extra is a symbolic link",
    ),
    "listed-file-as-link": (
        lambda d: replace_by_link_to_copy(d / "saved_model.pb"),
        r"saved_model\.pb is a symbolic link",
    ),
    "link-to-a-directory": (
        lambda d: (d / "assets" / "up").symlink_to(d.parent),
        r"assets/up is a symbolic link",
    ),
    "fifo": (lambda d: os.mkfifo(d / "assets" / "pipe"), r"assets/pipe is a FIFO"),
    "socket": (lambda d: make_socket(d / "s"), r"\bs is a socket"),
    "device": (lambda d: make_device(d / "variables" / "null"), r"variables/null is a character"),
    "empty-directory": (
        lambda d: (d / "variables" / "empty").mkdir(),
        r"directory variables/empty/ is not listed in manifest\.json",
    ),
    "missing-directory": (
        lambda d: (d / "assets").rmdir(),
        r"directory assets/ is listed in manifest\.json but missing",
    ),
    "signature-as-link": (
        lambda d: (d / SIGNATURE).symlink_to(d / MANIFEST),
        r"manifest\.json\.hmac is a symbolic link",
    ),
}


@pytest.mark.parametrize(("plant", "reported"), PLANTED.values(), ids=PLANTED.keys())
def test_links_special_files_and_unlisted_directories_are_refused(
    artifacts, tmp_path, plant, reported
):
    copy = shutil.copytree(artifacts["savedmodel"], tmp_path / "export" / "model" / "1")
    plant(copy)
    with pytest.raises(ValueError, match=reported):
        verify_manifest(copy)
    if not (copy / SIGNATURE).is_symlink():
        sign_manifest(copy, KEY)  # a signed manifest does not vouch for what it does not list
    with pytest.raises(ValueError, match=reported):
        verify_manifest(copy, KEY)


def test_a_signed_export_is_signed_before_it_is_published(tmp_path, monkeypatch):
    """``export_servable(key=)`` signs each version in its staging directory,
    so the signature is there the moment the version appears."""
    from keras_rnncells.export import saved_model

    published = []

    def publish(directory: Path, target: Path, *args: object, **kwargs: object) -> None:
        published.append(verify_manifest(directory, KEY)["version"])  # staged, signed
        original_publish(directory, target, *args, **kwargs)

    original_publish = saved_model.publish
    monkeypatch.setattr(saved_model, "publish", publish)
    servable = recurrent_layer_servable("gru", units=2, input_dim=2)
    paths = export_servable(servable, tmp_path, formats=("onnx",), key=KEY)
    assert published == [1]
    verify_manifest(paths["onnx"].parent, KEY)


def test_the_verify_command(artifacts, tmp_path, capsys):
    """``rnncells verify`` through `main`, in this process: a child per call
    paid TensorFlow's import twice (the console script's ``rnncells verify``
    runs in a child in test_litert.py)."""

    def verify(*arguments: object) -> subprocess.CompletedProcess:
        try:
            main(["verify", *map(str, arguments)])
            code = 0
        except SystemExit as exit_info:
            code = exit_info.code
        printed = capsys.readouterr()
        return subprocess.CompletedProcess(arguments, code, printed.out, printed.err)

    intact = verify(artifacts["savedmodel"], artifacts["onnx"])
    assert intact.returncode == 0, intact.stderr
    assert intact.stdout.count("files match manifest.json; not signed") == 2
    # the first checks, the second is refused: an anticipated error, one line, exit 2
    signed, rehashed = (shutil.copytree(artifacts["savedmodel"], tmp_path / n) for n in "23")
    for directory in (signed, rehashed):
        sign_manifest(directory, KEY)
    rehash(rehashed)
    (tmp_path / "key").write_bytes(KEY + b"\n")  # a final line break is not part of the key
    both = verify("--key-file", tmp_path / "key", signed, rehashed)
    assert both.returncode == 2, both.stderr
    assert both.stdout == f"ok  {signed}: 4 files match manifest.json; signed with the key given\n"
    assert both.stderr.splitlines() == [
        f"rnncells verify: error: {rehashed}: manifest.json.hmac does not match manifest.json "
        "under this key: the manifest was altered, or signed with another key"
    ]
