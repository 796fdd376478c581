"""Files written atomically: a reader sees the old file or the new one, never
half of one (`write_atomically`), and JSON so written (`write_json`)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomically(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """``write(temporary_path)``, then rename the temporary file onto ``path``
    (same directory), so readers see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent
    )
    os.close(handle)
    try:
        write(temporary)
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())  # on disk before the rename makes it visible
        os.chmod(temporary, 0o666 & ~current_umask())  # mkstemp made it private
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_json(path: str | os.PathLike, data: Any) -> None:
    """``data`` as indented JSON, written atomically."""

    def write(temporary: str) -> None:
        Path(temporary).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    write_atomically(path, write)
