"""``rnncells train --strategy`` (keras_rnncells.distribute).

Three real runs of one tiny model through the command line, in their own
processes (the CPU must be split into logical devices before TensorFlow
starts, and each worker of a cluster is a process): one device, then
`MirroredStrategy` over two logical CPU devices and `MultiWorkerMirroredStrategy`
with two worker processes on 127.0.0.1, the two started together.

The distributed runs split every batch of 16 in two halves of 8, each replica
takes its half's mean loss divided by 2, and the gradients are summed: the
same gradient as one device's, up to the order of float32 additions. So the
per-epoch losses must agree to float32 rounding. ``TOLERANCE`` is 1e-5 on
losses near 2.3 (about 40 float32 ulps there; the runs measured differ by
0 to 5e-7), far below what a wrong split shows: a run whose first epoch used
another shuffle order, or half of each batch, differed by 3e-4 or more.

The model is an MGU of 8 units on MNIST read row by row (28 steps), as it is
the one task with fixed-size batches (64 examples, 4 batches of 16, no
smaller last batch; the generated tasks bucket by length and end buckets with
small batches, which replicas split unevenly).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from keras_rnncells.cli import main
from keras_rnncells.distribute import (
    cluster_config,
    local_cluster,
    make_strategy,
    worker_command,
)

TOLERANCE = 1e-5
RUN = ["mnist_rows", "--cell", "mgu", "--units", "8", "--epochs", "2", "--batch-size", "16"]
RUN += ["--limit", "64", "--seed", "0"]
STRATEGIES = {
    "none": [],
    "mirrored": ["--strategy", "mirrored", "--cpu-devices", "2"],
    "multiworker": ["--strategy", "multiworker", "--workers", "2"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, require_data) -> dict[str, Path]:
    """The run directory of each strategy, each run with its own empty TMPDIR
    (where workers write). The two worker processes of the multi-worker run
    start alone: in one CI run on 2 cores, started beside the other two runs
    (four TensorFlow processes at once, another test file's in parallel), its
    second worker stopped sending heartbeats and the chief failed."""
    require_data("mnist")
    root = tmp_path_factory.mktemp("distribute")

    def start(name):
        (root / f"tmp-{name}").mkdir()
        environ = {**os.environ, "TMPDIR": str(root / f"tmp-{name}"), "TF_CPP_MIN_LOG_LEVEL": "3"}
        environ.pop("TF_CONFIG", None)
        command = [sys.executable, "-m", "keras_rnncells.cli", "train", *RUN]
        command += ["--out", str(root / name), *STRATEGIES[name]]
        return subprocess.Popen(
            command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def finish(name, process):
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"{name} run failed:\n{output[-6000:]}"

    finish("multiworker", start("multiworker"))
    processes = {name: start(name) for name in ("mirrored", "none")}
    for name, process in processes.items():
        finish(name, process)
    return {name: root / name for name in STRATEGIES}


def history(run_dir: Path) -> list[dict[str, float]]:
    with open(run_dir / "history.csv", encoding="utf-8") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # a two-device training run (56 s of the default run)
@pytest.mark.parametrize("name, replicas, workers", [("mirrored", 2, 1), ("multiworker", 2, 2)])
def test_distributed_training_matches_one_device(runs, name, replicas, workers):
    one, many = history(runs["none"]), history(runs[name])
    assert [row["epoch"] for row in many] == [0, 1]
    for single, distributed in zip(one, many, strict=True):
        for key in ("loss", "val_loss", "accuracy", "val_accuracy"):
            assert distributed[key] == pytest.approx(single[key], abs=TOLERANCE), key
    assert one[1]["loss"] < one[0]["loss"] - 100 * TOLERANCE  # the runs did train
    reference, run = results(runs["none"]), results(runs[name])
    assert run["distribution"] == {"strategy": name, "replicas": replicas, "workers": workers}
    assert reference["distribution"] == {"strategy": "none", "replicas": 1, "workers": 1}
    assert run["test"]["loss"] == pytest.approx(reference["test"]["loss"], abs=TOLERANCE)
    # Only the chief wrote: the same files as one device, and the worker's
    # temporary directory is gone.
    assert sorted(p.name for p in runs[name].iterdir()) == sorted(
        p.name for p in runs["none"].iterdir()
    )
    assert list((runs[name].parent / f"tmp-{name}").iterdir()) == []


@pytest.mark.parametrize(
    "tf_config, message",
    [
        (None, "is not set"),
        ("{not json", "is not JSON"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}}', "lacks `cluster` or `task`"),
        ('{"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": 0}}', "must map"),
        (
            '{"cluster": {"worker": ["nohostport"]}, "task": {"type": "worker", "index": 0}}',
            "must map",
        ),
        ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}}', "index into"),
        ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "chief", "index": 0}}', "index into"),
    ],
)
def test_bad_tf_config_is_refused_naming_the_variable(tf_config, message):
    environ = {} if tf_config is None else {"TF_CONFIG": tf_config}
    with pytest.raises(ValueError, match="`TF_CONFIG`") as error:
        cluster_config(environ)
    assert message in str(error.value)


def test_local_cluster_gives_each_worker_its_task_on_distinct_ports():
    configs = [json.loads(text) for text in local_cluster(3)]
    addresses = configs[0]["cluster"]["worker"]
    assert len(set(addresses)) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
    for index, config in enumerate(configs):
        assert config["cluster"] == {"worker": addresses}
        assert config["task"] == {"type": "worker", "index": index}
        assert cluster_config({"TF_CONFIG": json.dumps(config)}) == config
    with pytest.raises(ValueError, match="`workers`"):
        local_cluster(0)


def test_worker_command_runs_the_same_training_without_workers():
    argv = ["train", "adding", "--strategy", "multiworker", "--workers", "2", "--out", "r"]
    expected = [sys.executable, "-m", "keras_rnncells.cli", "train", "adding"]
    expected += ["--strategy", "multiworker", "--out", "r"]
    assert worker_command(argv) == expected
    assert worker_command([*argv[:4], "--workers=2", *argv[6:]]) == expected


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        make_strategy("ring")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["sentiment", "--strategy", "mirrored"], "--strategy is supported for the data tasks"),
        (["adding", "--cpu-devices", "2"], "--cpu-devices needs --strategy mirrored"),
        (["adding", "--strategy", "mirrored", "--workers", "2"], "--workers needs --strategy"),
    ],
)
def test_cli_refuses_inconsistent_distribution_flags(tmp_path, arguments, message):
    with pytest.raises(SystemExit, match=message):
        main(["train", *arguments, "--out", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()


def test_cli_refuses_workers_inside_a_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", local_cluster(1)[0])
    arguments = ["adding", "--strategy", "multiworker", "--workers", "2"]
    with pytest.raises(SystemExit, match="TF_CONFIG is set"):
        main(["train", *arguments, "--out", str(tmp_path / "run")])
