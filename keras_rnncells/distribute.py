"""Training on several devices or machines with `tf.distribute`.

``rnncells train TASK --strategy NAME`` trains under one of `STRATEGIES`:

* ``none``: the default strategy, one device;
* ``mirrored``: `tf.distribute.MirroredStrategy`, one replica per local GPU,
  or per logical CPU device when there is no GPU (``--cpu-devices N`` splits
  the CPU into N with `split_cpu`, which must run before TensorFlow
  initializes its devices);
* ``multiworker``: `tf.distribute.MultiWorkerMirroredStrategy`, one process
  per machine, the cluster read from the ``TF_CONFIG`` environment variable
  (`cluster_config`); ``--workers N`` starts N such processes on 127.0.0.1
  instead (`launch_local_workers`).

The batch size is global: each step splits it between the replicas and sums
their gradients (each replica's loss is divided by the number of replicas).
Every worker runs the same program, but only the chief writes the run
directory; the others write into a temporary directory they delete
(`writable_run_dir`), the usual multi-worker pattern.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import tensorflow as tf

from keras_rnncells.checks import check_positive_int
from keras_rnncells.defaults import STRATEGIES, cluster_config


def split_cpu(devices: int) -> None:
    """Split the CPU into ``devices`` logical devices (`MirroredStrategy`
    then runs one replica on each). Must run before TensorFlow initializes its
    devices, that is before the first tensor or device query."""
    check_positive_int("devices", devices)
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(devices)]
        )
    except RuntimeError as error:
        raise RuntimeError(
            f"Cannot split the CPU into {devices} devices: TensorFlow has already "
            "initialized its devices; split before creating any tensor"
        ) from error


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The strategy of ``name`` (one of `STRATEGIES`)."""
    if name == "none":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if tf.config.list_logical_devices("GPU"):
            return tf.distribute.MirroredStrategy()
        cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(cpus)
    if name == "multiworker":
        cluster_config()  # a clear error before TensorFlow reads it
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"Argument `strategy` must be one of {STRATEGIES}, received: {name!r}")


def prepare_model(model: Any, strategy: tf.distribute.Strategy) -> None:
    """Let ``model`` (made and compiled in ``strategy.scope()``) ``fit`` and
    ``evaluate`` under ``strategy``.

    Keras 3 (3.15 here) cannot train under `MultiWorkerMirroredStrategy` as it
    stands (keras-team/keras#20585, tensorflow/tensorflow#72388): it averages
    per-replica values with ``Strategy.reduce``, which that strategy refuses
    for an ``(x, y)`` batch (peeked at before training, for its shapes) and
    for scalars along axis 0 (the logs of every step). So under that strategy
    ``model`` takes the batch's shapes from this worker's first replica, and
    its train and test functions return the first replica's logs: the metrics
    are summed over all replicas as they update, so every replica holds the
    same values. Other strategies are left alone."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return

    def first_replica(values: Any) -> Any:
        return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], values)

    def symbolic_build(iterator: Any = None, data_batch: Any = None) -> None:
        if iterator is not None:
            for _, _, batches in iterator:
                data_batch = first_replica(next(batches))
                break
        with strategy.scope():
            model._symbolic_build(data_batch=data_batch)

    def step_function(step: Any) -> Any:
        @tf.function
        def function(iterator: Any) -> Any:
            return first_replica(strategy.run(step, args=(next(iterator),)))

        return function

    model._maybe_symbolic_build = symbolic_build
    model.train_function = step_function(model.train_step)
    model.test_function = step_function(model.test_step)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run directory: always, except for the
    workers of a multi-worker cluster other than its chief (the task of type
    'chief', or worker 0 when there is none)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


@contextlib.contextmanager
def writable_run_dir(
    run_dir: str | os.PathLike, strategy: tf.distribute.Strategy
) -> Iterator[Path]:
    """``run_dir`` on the chief; elsewhere a temporary directory, deleted
    afterwards, holding a copy of the chief's ``backup/`` when ``run_dir`` is
    readable (one machine or a shared file system), so every worker resumes an
    interrupted run from the same epoch."""
    run_dir = Path(run_dir)
    if is_chief(strategy):
        yield run_dir
        return
    temporary = Path(tempfile.mkdtemp(prefix="rnncells-worker-"))
    try:
        if (run_dir / "backup").is_dir():
            shutil.copytree(run_dir / "backup", temporary / "backup")
        yield temporary
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def describe(strategy: tf.distribute.Strategy) -> dict[str, Any]:
    """What results.json records of a strategy: its name (in `STRATEGIES`, or
    its class), replicas and workers."""
    names = {
        "multiworker": tf.distribute.MultiWorkerMirroredStrategy,
        "mirrored": tf.distribute.MirroredStrategy,
    }
    name = next((n for n, cls in names.items() if isinstance(strategy, cls)), None)
    if name is None:
        default = strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy()
        name = "none" if default else type(strategy).__name__
    resolver = getattr(strategy, "cluster_resolver", None)
    cluster = resolver.cluster_spec().as_dict() if resolver else {}
    workers = sum(len(cluster.get(role, [])) for role in ("chief", "worker"))
    return {"strategy": name, "replicas": strategy.num_replicas_in_sync, "workers": max(workers, 1)}


# -- local multi-worker launches ------------------------------------------------------
def free_ports(count: int) -> list[int]:
    """``count`` TCP ports of 127.0.0.1 that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def local_cluster(workers: int) -> list[str]:
    """The ``TF_CONFIG`` of each of ``workers`` processes on 127.0.0.1 (worker 0
    is the chief)."""
    check_positive_int("workers", workers)
    addresses = [f"127.0.0.1:{port}" for port in free_ports(workers)]
    return [
        json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": i}})
        for i in range(workers)
    ]


def launch_local_workers(command: Sequence[str], workers: int, poll_seconds: float = 0.2) -> int:
    """Run ``command`` in ``workers`` processes on this machine, each with its
    ``TF_CONFIG`` (`local_cluster`); only the chief's standard output is shown.
    Returns 0, or the exit status of the first process that failed, after
    stopping the others (they would wait for it forever)."""
    processes = []
    try:
        for index, config in enumerate(local_cluster(workers)):
            environ = {**os.environ, "TF_CONFIG": config}
            stdout = None if index == 0 else subprocess.DEVNULL
            processes.append(subprocess.Popen(list(command), env=environ, stdout=stdout))
        while True:
            codes = [p.poll() for p in processes]
            failed = [code for code in codes if code]
            if failed or all(code == 0 for code in codes):
                return failed[0] if failed else 0
            time.sleep(poll_seconds)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait()


def worker_command(argv: Sequence[str]) -> list[str]:
    """The ``rnncells`` command a local worker runs: ``argv`` without ``--workers``."""
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--workers":
            skip = True
        elif not word.startswith("--workers="):
            kept.append(word)
    return [sys.executable, "-m", "keras_rnncells.cli", *kept]
