"""Claims between processes (`keras_rnncells.locks`): held by real processes,
refused naming the holder's pid, taken over once the holder died (SIGKILL),
released however the block ends. The helper processes load the module by
its path (no TensorFlow), so each starts in a fraction of a second."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keras_rnncells import locks
from keras_rnncells.locks import Claim, InUse, run_lock

# A process claiming argv[2] (a path) with the module at argv[1], saying "held"
# or "refused <holder>", then waiting for its standard input to close.
HOLDER = """
import json, runpy, sys
claim = runpy.run_path(sys.argv[1])["Claim"](sys.argv[2])
holder = claim.try_acquire()
print("held" if holder is None else "refused " + json.dumps(holder), flush=True)
sys.stdin.read()
"""


def start_holder(path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, locks.__file__, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_live_holder_is_named_and_a_dead_ones_claim_is_taken_over(tmp_path):
    path = tmp_path / ".lock"
    holder = start_holder(path)
    try:
        assert holder.stdout.readline().strip() == "held"
        record = Claim(path).try_acquire()
        assert record["pid"] == holder.pid and record["host"] == os.uname().nodename
        with pytest.raises(InUse, match=rf"{tmp_path} is in use by pid {holder.pid} \(host "):
            with run_lock(tmp_path):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)  # no chance to clean up
        holder.wait()
    stale = json.loads(path.read_text())
    assert stale["pid"] == holder.pid  # left behind, naming a dead process
    with run_lock(tmp_path):
        assert json.loads(path.read_text())["pid"] == os.getpid()  # taken over
    assert not path.exists()  # released: deleted


def test_one_claimant_of_many_racing_processes_wins(tmp_path):
    path = tmp_path / ".7.claim"
    racers = [start_holder(path) for _ in range(6)]
    try:
        answers = [racer.stdout.readline().strip() for racer in racers]
    finally:
        for racer in racers:
            racer.stdin.close()
            racer.wait()
    winners = [racer.pid for racer, answer in zip(racers, answers) if answer == "held"]
    assert len(winners) == 1, answers
    refusals = [json.loads(a.split(" ", 1)[1]) for a in answers if a != "held"]
    assert all(refusal == {} or refusal["pid"] == winners[0] for refusal in refusals), answers


def test_a_claim_is_released_on_an_exception_and_excludes_within_a_process(tmp_path):
    with pytest.raises(RuntimeError, match="inside"):
        with run_lock(tmp_path / "run") as run_dir:
            assert (run_dir / ".lock").is_file()
            with pytest.raises(InUse, match=f"in use by pid {os.getpid()} "):
                with run_lock(run_dir):  # another open file: flock excludes it too
                    pass
            raise RuntimeError("inside")
    assert not (tmp_path / "run" / ".lock").exists()
    with run_lock(tmp_path / "run"):  # free again
        pass


def test_a_claimant_waits_briefly_for_the_holder_to_write_its_name(tmp_path, monkeypatch):
    """A holder locks the file, then writes its record: a refused claimant
    reading in between waits a moment, then names the holder as unknown."""
    monkeypatch.setattr(locks, "NAME_WAIT_SECONDS", 0.1)
    path = tmp_path / ".lock"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        started = time.monotonic()
        assert Claim(path).try_acquire() == {}
        assert time.monotonic() - started >= 0.1
        assert "has not written its pid" in locks.describe_holder({})
    finally:
        os.close(descriptor)
