"""Where the offline benchmark data lives. Readers never download."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "RNNCELLS_DATA"


def default_roots() -> list[Path]:
    """The folders tried when neither an argument nor ``$RNNCELLS_DATA`` is
    given: ``../shared/data`` from the current directory, then ``shared/data``
    next to the package's checkout; each once (from the checkout's root
    they are one folder)."""
    checkout = Path(__file__).resolve().parents[2]
    roots = (Path.cwd().resolve().parent, checkout.parent)
    return list(dict.fromkeys(root / "shared" / "data" for root in roots))


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: ``root``, else ``$RNNCELLS_DATA``, else the first of
    `default_roots` that exists.

    Raises ``FileNotFoundError`` naming the paths tried when there is none.
    """
    if root is None:
        root = os.environ.get(ENV_VAR) or None
    tried = [Path(root)] if root is not None else default_roots()
    for path in tried:
        if path.is_dir():
            return path
    raise FileNotFoundError(
        f"No benchmark data folder at {', '.join(map(str, tried))}. Pass `root=` or set "
        f"${ENV_VAR} to the folder holding ptb/, sst2/, imdb/, mnist/ (nothing is downloaded)."
    )


def data_file(folder: str, name: str, root: str | os.PathLike | None = None) -> Path:
    """The path of ``<data root>/<folder>/<name>``; ``FileNotFoundError`` if missing."""
    path = data_root(root) / folder / name
    if not path.is_file():
        raise FileNotFoundError(
            f"Missing data file {path}. Pass `root=` or set ${ENV_VAR} to the folder holding "
            f"{folder}/{name} (nothing is downloaded)."
        )
    return path
