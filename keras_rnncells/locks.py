"""Claims between processes: a run directory held by the one run training in
it (`run_lock`), an export version number held by the one export writing it
(``keras_rnncells.export.saved_model.Staging.claim``).

A claim is a small file naming its holder (pid, host, start time, command),
locked with ``fcntl.flock`` for as long as the holder holds it. The kernel
drops that lock when the holder's process ends, however it ends (a SIGKILL
included), so a claim file left behind by a dead process is free by
construction: the next claimant locks it and writes its own name into it.
Liveness is never guessed from a pid, which the system may have given to
another process since; the pid is there to name the holder in a refusal.

This module imports no TensorFlow: the command line may claim before it
loads it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

LOCK_FILE = ".lock"  # in a run directory, while a run trains in it
# How long a refused claimant waits for the holder to have written its name
# (it writes right after locking); then the holder is named "unknown".
NAME_WAIT_SECONDS = 0.5


class InUse(ValueError):
    """A claim another live process holds: ``path`` is the claim file,
    ``holder`` what its holder wrote into it (`describe_holder`)."""

    def __init__(self, message: str, path: Path, holder: dict[str, Any]) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder


def this_holder() -> dict[str, Any]:
    """What a claim file says of this process."""
    command = " ".join([Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]])
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": command if len(command) <= 120 else command[:117] + "...",
    }


def describe_holder(holder: dict[str, Any]) -> str:
    """``pid N (host H, since T: COMMAND)``, from what a claim file holds."""
    if "pid" not in holder:
        return "another process (it has not written its pid yet)"
    details = [f"host {holder.get('host', '?')}", f"since {holder.get('since', '?')}"]
    command = f": {holder['command']}" if holder.get("command") else ""
    return f"pid {holder['pid']} ({', '.join(details)}{command})"


class Claim:
    """An exclusive claim on ``path`` (a file this class creates and deletes).

    ``try_acquire()`` claims it, or returns what the live holder wrote;
    ``release()`` deletes the file and drops the lock. One process may hold
    several claims; two `Claim` objects on one path exclude each other even
    within a process (``flock`` locks an open file, not a process)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.descriptor: int | None = None

    @property
    def held(self) -> bool:
        return self.descriptor is not None

    def try_acquire(self) -> dict[str, Any] | None:
        """None once this object holds the claim; else the holder's record.
        A file left by a dead holder is taken over. The parent directory
        must exist."""
        if self.held:
            return None
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = read_holder(descriptor)
                os.close(descriptor)
                return holder
            except BaseException:
                os.close(descriptor)
                raise
            if not names_same_file(descriptor, self.path):
                # the holder released (deleted) it between our open and our
                # lock: we locked a file no longer at the path; again
                os.close(descriptor)
                continue
            try:
                os.ftruncate(descriptor, 0)
                os.write(descriptor, (json.dumps(this_holder()) + "\n").encode("utf-8"))
            except BaseException:  # a full disk: leave no claim file behind
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
                os.close(descriptor)
                raise
            self.descriptor = descriptor
            return None

    def release(self) -> None:
        """Deletes the claim file, then drops the lock (so whoever opened the
        file meanwhile sees it is no longer the claim, and claims anew)."""
        if self.descriptor is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self.descriptor)
        self.descriptor = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def names_same_file(descriptor: int, path: Path) -> bool:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino)


def read_holder(descriptor: int) -> dict[str, Any]:
    """The record of a claim file's holder, waiting a moment for a holder
    that has locked the file but not yet written it; ``{}`` if none came."""
    deadline = time.monotonic() + NAME_WAIT_SECONDS
    while True:
        text = os.pread(descriptor, 4096, 0).decode("utf-8", errors="replace")
        try:
            holder = json.loads(text)
        except json.JSONDecodeError:
            holder = None
        if isinstance(holder, dict) or time.monotonic() > deadline:
            return holder if isinstance(holder, dict) else {}
        time.sleep(0.02)


@contextlib.contextmanager
def run_lock(run_dir: str | os.PathLike) -> Iterator[Path]:
    """Holds ``run_dir/.lock`` (`LOCK_FILE`) for the block: one run at a time
    trains in a run directory. Raises `InUse` naming the live holder's pid;
    a lock file left by a dead run is taken over. ``run_dir`` is created
    where missing; the lock is released however the block ends."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    claim = Claim(run_dir / LOCK_FILE)
    holder = claim.try_acquire()
    if holder is not None:
        raise InUse(
            f"{run_dir} is in use by {describe_holder(holder)}: wait for that run to end, "
            "or choose another run directory",
            claim.path,
            holder,
        )
    try:
        yield run_dir
    finally:
        claim.release()
