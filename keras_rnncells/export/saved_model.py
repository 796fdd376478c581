"""SavedModel export in TF Serving's layout, checked in a fresh process.

``write_saved_model(servable_or_model, export_root)`` writes
``export_root/<name>/<version>/`` (``name``: the servable's, or a Keras model's
``model.name``; see ``keras_rnncells.export.servable_from_model``)::

    saved_model.pb, variables/       tf.saved_model.save of servable.module (and the
                                     variables servable.serve reads, `serving_root`),
                                     signatures={"serving_default": servable.serve}
    assets.extra/<vocabulary files>  the tokens, one per line, for clients: the graph
                                     holds its own tables and never reads them
    manifest.json                    keras_rnncells.export.manifest (checksums, parity)

With ``streaming=True`` the SavedModel also has a signature ``"step"``: the
servable's step form (``keras_rnncells.export.streaming``: the model's inputs
holding k >= 1 new steps and ``state_0`` ... ``state_{n-1}`` in, its outputs
and the new states out), checked chunk by chunk against the whole sequence
before anything is written, and in the fresh process beside
``serving_default``; the manifest describes it under ``"streaming"``.

TF Serving loads ``saved_model.pb``, ``variables/`` and ``assets/`` of a
version directory and looks into ``assets.extra/`` for
``tf_serving_warmup_requests`` only, so ``manifest.json`` sits next to them.
It also treats only numeric directory names as versions, and loads a version
as soon as the directory appears: the export is built and checked in a
hidden sibling directory (``.<version>.*``, `Staging`) and renamed into place
once every check of the export passed; a failed check leaves the export root
as it was (no version, no new directory). The version number is claimed
first (``.<version>.claim``, `Staging.claim`), so that two exports running at
once into one root never get the same number, nor replace each other's.

Before that rename, the graph is scanned for cuDNN-only ops (a model traced on
a GPU's cuDNN path would not serve on a CPU), and the SavedModel is run in a
fresh Python process that imports only TensorFlow and tensorflow-text
(``keras_rnncells.export.check``), both by ``tf.saved_model.load`` and in a
TensorFlow 1 session after its restore op, as TF Serving and ``saved_model_cli
run`` load it. Their outputs on ``servable.examples`` must match
``servable.serve`` in this process (float outputs to ``tolerance``, strings
and integers exactly); the errors are recorded in the manifest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_rnncells.checks import check_float
from keras_rnncells.export import check as checker
from keras_rnncells.export.check import SIGNATURE, full_float32, load_and_run
from keras_rnncells.export.fresh import run_fresh_python
from keras_rnncells.export.manifest import tensor_spec, write_manifest
from keras_rnncells.export.servable import Servable, as_servable
from keras_rnncells.export.streaming import (
    STEP_SIGNATURE,
    StepForm,
    check_streaming,
    step_form,
    step_specs,
)
from keras_rnncells.files import current_umask
from keras_rnncells.layers.rnn import portable
from keras_rnncells.locks import Claim, describe_holder

VOCABULARY_DIRECTORY = "assets.extra"
TOLERANCE = 1e-5  # float outputs, reloaded SavedModel vs the exporting process

__all__ = [
    "Staging",
    "cudnn_ops",
    "load_and_run",
    "predict_request",
    "write_saved_model",
    "write_saved_models",
]


def write_saved_model(
    servable: Servable | keras.Model,
    export_root: str | os.PathLike,
    version: int | None = None,
    overwrite: bool = False,
    check: bool = True,
    tolerance: float = TOLERANCE,
    streaming: bool = False,
) -> Path:
    """Exports ``servable`` to ``export_root/<name>/<version>/`` and returns
    that directory.

    ``servable``: a `Servable`, or any Keras model (Sequential, functional,
    subclassed), whose `Servable` `keras_rnncells.export.model_servable` makes,
    named ``model.name`` (for another name or an explicit input signature,
    pass ``servable_from_model(model, name, input_signature)``).

    ``version``: a positive integer, or ``None`` for one more than the largest
    version there (1 for the first), or than the versions other exports are
    writing at the time (`Staging.claim`). An existing version is replaced only
    with ``overwrite=True``. ``check=False`` skips the fresh-process parity
    check (the manifest then records no parity).

    ``streaming``: also a ``"step"`` signature, the step form
    (`keras_rnncells.export.streaming.step_form`; a ``ValueError`` naming the
    layer where the model cannot stream)."""
    return write_saved_models(
        [servable], export_root, version, overwrite, check, tolerance, streaming
    )[0]


def write_saved_models(
    servables: Sequence[Servable | keras.Model],
    export_root: str | os.PathLike,
    version: int | None = None,
    overwrite: bool = False,
    check: bool = True,
    tolerance: float = TOLERANCE,
    streaming: bool = False,
) -> list[Path]:
    """``write_saved_model`` for several servables or models (distinct
    names), checked in one fresh process (importing TensorFlow there takes
    seconds) and published once all passed, or none of them."""
    check_version(version)
    servables = [as_servable(f"servables[{i}]", servable) for i, servable in enumerate(servables)]
    check_float("tolerance", tolerance, "(0, inf)")
    names = [servable.name for servable in servables]
    if len(set(names)) != len(names):
        raise ValueError(f"Argument `servables` must have distinct names, got {names}")
    export_root = Path(os.path.abspath(export_root))  # the fresh process runs elsewhere
    with Staging() as staging:
        targets = [
            export_root / name / str(staging.claim([export_root / name], version, overwrite))
            for name in names
        ]
        stage_saved_models(servables, targets, staging, check, tolerance, streaming)
        staging.publish()
    return targets


# The largest version number: TF Serving reads a version directory's name as an
# int64 and skips one that does not fit (`published_versions` skips it too).
MAX_VERSION = 2**63 - 1


def check_version(version: Any) -> int | None:
    """``version`` if it is ``None`` or an integer from 1 to `MAX_VERSION`
    (TF Serving reads versions as int64), else a one-line ``ValueError``."""
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_VERSION
    ):
        raise ValueError(
            "Argument `version` must be a positive integer of at most 2**63 - 1 (TF Serving "
            f"reads versions as int64) or None, received: {version!r}"
        )
    return version


def stage_saved_models(
    servables: Sequence[Servable],
    targets: Sequence[Path],
    staging: Staging,
    check: bool = True,
    tolerance: float = TOLERANCE,
    streaming: bool = False,
) -> None:
    """Each servable's SavedModel staged for its target version directory,
    checked in one fresh process (with ``check``) and given its manifest.
    With ``streaming``, each also gets its step form (``"step"``), checked
    chunk by chunk first (`keras_rnncells.export.streaming.check_streaming`)."""
    forms = [step_form(servable) if streaming else None for servable in servables]
    chunked = [check_streaming(form, tolerance) if form and check else {} for form in forms]
    staged = [
        stage(servable, staging.directory(target), form)
        for servable, target, form in zip(servables, targets, forms)
    ]
    parities = fresh_parities(servables, staged, tolerance, forms) if check else [{}] * len(staged)
    for servable, form, directory, target, parity, chunks in zip(
        servables, forms, staged, targets, parities, chunked
    ):
        parity = dict(parity)
        step = None if form is None else step_manifest(form, chunks, parity.pop("step", None))
        write_servable_manifest(servable, directory, int(target.name), parity, step)


def published_versions(*model_directories: Path) -> set[int]:
    """The numeric version directories under any of ``model_directories``
    (names of ASCII digits, at most `MAX_VERSION`: what TF Serving loads)."""
    return {
        int(entry.name)
        for directory in model_directories
        if directory.is_dir()
        for entry in directory.iterdir()
        if entry.name.isascii()
        and entry.name.isdigit()
        and int(entry.name) <= MAX_VERSION
        and entry.is_dir()
    }


def stage(servable: Servable, directory: Path, form: StepForm | None = None) -> Path:
    """The SavedModel and vocabulary files of ``servable`` in ``directory``
    (empty: a `Staging` directory), with the step form ``form`` as the
    ``"step"`` signature where given; returns ``directory``."""
    signatures = {SIGNATURE: servable.serve}
    if form is not None:
        signatures[STEP_SIGNATURE] = form.function
    with portable():
        tf.saved_model.save(
            serving_root(servable, *signatures.values()), os.fspath(directory), signatures
        )
    found = saved_model_cudnn_ops(directory)
    if found:
        raise ValueError(
            f"Argument `servable` ({servable.name!r}) traced cuDNN-only ops {found}, which "
            "serve on no CPU: trace its functions under keras_rnncells.layers.rnn.portable()"
        )
    for name, tokens in servable.vocabulary_files.items():
        path = directory / VOCABULARY_DIRECTORY / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"{token}\n" for token in tokens), encoding="utf-8")
    return directory


def serving_root(servable: Servable, *functions: Any) -> tf.Module:
    """What is saved: ``servable.module`` and, tracked directly, the variables
    that ``functions`` (default: ``serve``; the step form's too where given)
    read. Saved through Keras 3 layers only, those variables are
    restored by ``tf.saved_model.load`` but not by the SavedModel's restore op,
    which TF Serving and ``saved_model_cli run`` use ("Could not find variable
    ..."; keras-team/keras#19274); ``keras.export.ExportArchive`` tracks them
    the same way."""
    root = tf.Module()
    root.module = servable.module
    functions = functions or (servable.serve,)
    root.serving_variables = list(
        {id(v): v for f in functions for v in f.get_concrete_function().variables}.values()
    )
    return root


class Staging:
    """Version directories built in hidden siblings of their targets and
    published together: ``with Staging() as staging``, ``staging.claim(...)``
    for the version number, ``staging.directory(target)`` for each artifact,
    every check, then ``staging.publish()``. Leaving the block without
    publishing (a failed check, an exception) deletes the staged directories
    and every directory ``claim`` or ``directory`` created for them, so the
    export root is left as it was. The claims are released however the block
    ends.

    ``publish`` renames the staged directories onto their targets one after
    the other, once everything was written and checked: an export killed
    during those renames may have published only some of its artifacts (and
    leaves its claim files, which the next export takes over)."""

    def __init__(self) -> None:
        self.staged: list[tuple[Path, Path]] = []  # (hidden directory, target)
        self.created: list[Path] = []  # the parent directories made for them
        self.claims: list[Claim] = []
        self.replaceable: set[Path] = set()  # targets claimed with overwrite

    def claim(
        self,
        model_directories: Sequence[Path],
        version: int | None = None,
        overwrite: bool = False,
        numbered_with: Sequence[Path] = (),
    ) -> int:
        """Claims one version number in each of ``model_directories`` (the
        file ``<directory>/.<version>.claim``, held until the block ends) and
        returns it; every format of an export gets the same number.

        ``version`` None: one more than the largest version published under
        ``model_directories`` and ``numbered_with``, or the next number that
        no other export holds a claim on and none has published meanwhile:
        of two exports racing for a number, the first to claim it gets it,
        the other the next. A given ``version`` claimed by a live export is
        refused, and so is a published one unless ``overwrite``."""
        directories = [Path(os.path.abspath(d)) for d in model_directories]
        candidate = version or max(published_versions(*directories, *numbered_with), default=0) + 1
        while True:
            if candidate > MAX_VERSION:  # only numbering past a published 2**63 - 1 gets here
                raise ValueError(
                    f"Argument `version`: the next version after {MAX_VERSION} would not fit "
                    "TF Serving's int64; pass a free version below it"
                )
            busy = self.claim_number(directories, candidate)
            if busy is not None:
                if version is not None:
                    taken, holder = busy
                    raise ValueError(
                        f"Argument `version`: {taken} is being exported by "
                        f"{describe_holder(holder)}; wait for it to end, or pass another version"
                    )
                candidate += 1
                continue
            targets = [directory / str(candidate) for directory in directories]
            published = [target for target in targets if target.exists()]
            if not published or (version is not None and overwrite):
                if overwrite:
                    self.replaceable.update(targets)
                return candidate
            self.release_claims(len(directories))  # published meanwhile: not ours
            if version is not None:
                raise ValueError(
                    f"Argument `version`: {published[0]} exists; "
                    "pass overwrite=True to replace it, or another version"
                )
            candidate += 1

    def claim_number(
        self, directories: Sequence[Path], version: int
    ) -> tuple[Path, dict[str, Any]] | None:
        """Claims ``version`` in every directory, or none of them: None, or
        the version directory another process holds and what its claim says."""
        for index, directory in enumerate(directories):
            claim = Claim(directory / f".{version}.claim")
            for attempt in range(3):  # an export giving up may remove an empty directory
                self.make_parents(directory)
                try:
                    holder = claim.try_acquire()
                    break
                except FileNotFoundError:
                    if attempt == 2:
                        raise
            if holder is not None:
                self.release_claims(index)
                return directory / str(version), holder
            self.claims.append(claim)
        return None

    def release_claims(self, count: int) -> None:
        """Releases the ``count`` claims made last."""
        for _ in range(count):
            self.claims.pop().release()

    def make_parents(self, directory: Path) -> None:
        """``directory`` and its missing parents, remembered for deletion."""
        parents = [directory, *directory.parents]
        self.created.extend(parent for parent in parents if not parent.exists())
        directory.mkdir(parents=True, exist_ok=True)

    def directory(self, target: Path) -> Path:
        """A new empty hidden sibling of ``target`` (``.<name>.*``), its parent
        directories created where missing."""
        target = Path(os.path.abspath(target))
        self.make_parents(target.parent)
        directory = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        self.staged.append((directory, target))
        return directory

    def publish(self) -> None:
        """Renames every staged directory onto its target (`publish`); a
        target exists beforehand only where claimed with ``overwrite``."""
        while self.staged:
            directory, target = self.staged[0]
            publish(directory, target, replace=target in self.replaceable)
            self.staged.pop(0)
        self.created.clear()

    def __enter__(self) -> Staging:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for directory, _ in self.staged:
            shutil.rmtree(directory, ignore_errors=True)
        self.staged.clear()
        self.release_claims(len(self.claims))
        for parent in sorted(set(self.created), key=lambda p: len(p.parts), reverse=True):
            try:  # kept where something else is in it
                parent.rmdir()
            except OSError:
                pass
        self.created.clear()


def publish(directory: Path, target: Path, replace: bool = False) -> None:
    """Renames ``directory`` onto ``target``. An existing ``target`` is
    replaced only with ``replace``: moved aside first (a directory cannot be
    renamed onto a non-empty one), then deleted; without ``replace`` the
    rename fails rather than replace it. ``directory`` (private, as
    ``mkdtemp`` made it) first gets the umask's mode."""
    os.chmod(directory, 0o777 & ~current_umask())
    if not (replace and target.exists()):
        os.rename(directory, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    os.replace(target, old / target.name)
    os.replace(directory, target)
    shutil.rmtree(old)


def cudnn_ops(graph_def: tf.compat.v1.GraphDef) -> list[str]:
    """The cuDNN ops (``CudnnRNN``, ``CudnnRNNV3``, ...) of ``graph_def``,
    its function library included."""
    nodes = [*graph_def.node]
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return sorted({node.op for node in nodes if "cudnn" in node.op.lower()})


def saved_model_cudnn_ops(directory: str | os.PathLike) -> list[str]:
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((Path(directory) / "saved_model.pb").read_bytes())
    return sorted({op for graph in saved_model.meta_graphs for op in cudnn_ops(graph.graph_def)})


# -- parity in a fresh process ---------------------------------------------------


def fresh_parities(
    servables: Sequence[Servable],
    directories: Sequence[Path],
    tolerance: float,
    forms: Sequence[StepForm | None] = (),
) -> list[dict[str, Any]]:
    """Each servable's outputs on its examples, in this process and from its
    SavedModel in a fresh one by each loader of ``check.LOADERS``, compared
    (see `compare_outputs`). Where ``forms`` gives a servable a step form,
    its ``"step"`` signature is compared on the step form's examples too,
    under the key ``"step"``."""
    forms = list(forms) or [None] * len(servables)
    jobs = [(directory, servable.examples) for servable, directory in zip(servables, directories)]
    steps = [
        (index, (directories[index], form.examples, STEP_SIGNATURE))
        for index, form in enumerate(forms)
        if form is not None
    ]
    reloaded = run_in_fresh_process([*jobs, *(job for _, job in steps)])
    parities = [
        fresh_parity(servable.serve, servable.examples, by_loader, tolerance, servable.name)
        for servable, by_loader in zip(servables, reloaded)
    ]
    for (index, _), by_loader in zip(steps, reloaded[len(jobs) :]):
        form = forms[index]
        parities[index]["step"] = fresh_parity(
            form.function, form.examples, by_loader, tolerance, f"{form.name} {STEP_SIGNATURE}"
        )
    return parities


def fresh_parity(
    function: Any,
    examples: dict[str, np.ndarray],
    by_loader: dict[str, dict[str, np.ndarray]],
    tolerance: float,
    what: str,
) -> dict[str, Any]:
    """``function`` on ``examples`` here against each loader's outputs."""
    with full_float32():  # as the fresh process
        expected = function(**{k: tf.constant(v) for k, v in examples.items()})
    expected = {name: tensor.numpy() for name, tensor in expected.items()}
    return {
        "reference": "the signature's function in the exporting process",
        "checked_in": "a fresh Python process importing tensorflow, tensorflow_text",
        "loaders": {
            "load": "tf.saved_model.load",
            "session": "TF1 session after the restore op, as TF Serving runs it",
        },
        "examples": len(next(iter(examples.values()))),
        "tolerance": tolerance,
        "outputs": {
            loader: compare_outputs(expected, actual, tolerance, f"{what} {loader}")
            for loader, actual in by_loader.items()
        },
    }


def run_in_fresh_process(
    jobs: Sequence[tuple[Path, dict[str, np.ndarray]] | tuple[Path, dict[str, np.ndarray], str]],
) -> list[dict[str, dict[str, np.ndarray]]]:
    """For every job ``(directory, inputs)`` (or ``(directory, inputs,
    signature)``), the outputs of its SavedModel's ``serving_default`` (or
    that signature) by loader (``check.LOADERS``), all run in one new Python
    process that cannot import keras_rnncells (``keras_rnncells.export.check``)."""
    # next to the exports, not in the system's temporary directory: the CLI
    # writes only under the directory it is given
    parent = Path(jobs[0][0]).parent if jobs else None
    with tempfile.TemporaryDirectory(prefix=".check.", dir=parent) as temporary:
        temporary = Path(os.path.abspath(temporary))  # the child runs in it
        request = []
        for index, (directory, inputs, *signature) in enumerate(jobs):
            np.savez(temporary / f"inputs{index}.npz", **inputs)
            request.append(
                {
                    "directory": os.fspath(Path(directory).resolve()),
                    "inputs": os.fspath(temporary / f"inputs{index}.npz"),
                    "outputs": os.fspath(temporary / f"outputs{index}"),
                    "signature": signature[0] if signature else SIGNATURE,
                }
            )
        (temporary / "request.json").write_text(json.dumps(request), encoding="utf-8")
        source = Path(checker.__file__).read_text(encoding="utf-8")
        run_fresh_python(source, [temporary / "request.json"], "Loading the SavedModel", temporary)
        outputs = []
        for job in request:
            by_loader = {}
            for loader in checker.LOADERS:
                with np.load(f"{job['outputs']}.{loader}.npz") as loaded:
                    by_loader[loader] = dict(loaded)
            outputs.append(by_loader)
        return outputs


def compare_outputs(
    expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], tolerance: float, what: str
) -> dict[str, dict[str, Any]]:
    """Per output: ``{"max_abs_error": e}`` for floats, ``{"equal": True}``
    otherwise. Raises ``RuntimeError`` on a missing output, another shape, a
    float error above ``tolerance`` or unequal strings or integers."""
    if set(expected) != set(actual):
        raise RuntimeError(f"{what}: outputs {sorted(actual)} reloaded, {sorted(expected)} served")
    report = {}
    for name in sorted(expected):
        want, got = np.asarray(expected[name]), np.asarray(actual[name])
        if want.shape != got.shape:
            raise RuntimeError(f"{what}: output {name!r} reloaded as {got.shape}, not {want.shape}")
        if np.issubdtype(want.dtype, np.floating):
            error = float(np.max(np.abs(want - got), initial=0.0))
            if not error <= tolerance:  # NaN fails too
                raise RuntimeError(f"{what}: output {name!r} differs by {error} > {tolerance}")
            report[name] = {"max_abs_error": error}
        else:
            if want.dtype == object:  # TensorFlow strings; the fresh process sent bytes
                want = want.astype(bytes)
            if not np.array_equal(want, got):
                raise RuntimeError(f"{what}: output {name!r} reloaded as {got}, served {want}")
            report[name] = {"equal": True}
    return report


def step_manifest(
    form: StepForm, chunked: dict[str, Any], fresh: dict[str, Any] | None
) -> dict[str, Any]:
    """The manifest's ``"streaming"`` of a SavedModel: the ``"step"``
    signature, its inputs and outputs, the step form (`StepForm.description`)
    and its parity: chunk by chunk against the whole sequence (``chunked``),
    and reloaded in the fresh process (``fresh``)."""
    inputs, outputs = step_specs(form)
    parity = {"chunked": chunked, "fresh_process": fresh} if chunked else {}
    return {
        "signature": STEP_SIGNATURE,
        "inputs": inputs,
        "outputs": outputs,
        **form.description(),
        "parity": parity,
    }


def write_servable_manifest(
    servable: Servable,
    directory: Path,
    version: int,
    parity: dict[str, Any],
    streaming: dict[str, Any] | None = None,
) -> Path:
    concrete = servable.serve.get_concrete_function()
    inputs = [tensor_spec(s.name, s.dtype.name, s.shape.as_list()) for s in input_specs(servable)]
    outputs = [
        tensor_spec(name, tensor.dtype.name, tensor.shape.as_list())
        for name, tensor in sorted(concrete.structured_outputs.items())
    ]
    return write_manifest(
        directory,
        model=servable.name,
        cell=servable.cell,
        version=version,
        format="savedmodel",
        inputs=inputs,
        outputs=outputs,
        parity=parity,
        vocabulary_files=[f"{VOCABULARY_DIRECTORY}/{name}" for name in servable.vocabulary_files],
        extra={
            "tags": ["serve"],
            "signature": SIGNATURE,
            **({} if streaming is None else {"streaming": streaming}),
        },
        limits=None if servable.limits is None else servable.limits.manifest(),
    )


# -- TF Serving's gRPC API ---------------------------------------------------------


def input_specs(servable_or_signature: Any) -> list[tf.TensorSpec]:
    """The named input specs of a ``Servable`` or of a loaded signature."""
    if isinstance(servable_or_signature, Servable):
        return list(servable_or_signature.serve.input_signature)
    structured = getattr(servable_or_signature, "structured_input_signature", None)
    if structured is None:
        raise ValueError(
            "Argument `servable_or_signature` must be a Servable or a SavedModel signature "
            f"(loaded.signatures[...]), got {servable_or_signature!r}"
        )
    return [tf.TensorSpec(spec.shape, spec.dtype, name) for name, spec in structured[1].items()]


def predict_request(
    servable_or_signature: Any,
    inputs: dict[str, Any],
    model_name: str,
    signature_name: str = SIGNATURE,
    version: int | None = None,
) -> Any:
    """A TF Serving gRPC ``PredictRequest`` (tensorflow-serving-api) for
    ``model_name``'s signature, with ``inputs`` (arrays by input name) as
    tensors of the signature's dtypes, for
    ``PredictionServiceStub(channel).Predict(request)``."""
    from tensorflow_serving.apis import predict_pb2

    specs = {spec.name: spec for spec in input_specs(servable_or_signature)}
    if set(inputs) != set(specs):
        raise ValueError(
            f"Argument `inputs` must have the keys {sorted(specs)}, got {sorted(inputs)}"
        )
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = version
    for name, spec in specs.items():
        value = np.asarray(inputs[name])
        if not spec.shape.is_compatible_with(value.shape):
            raise ValueError(
                f"Argument `inputs`: {name!r} must have the shape {spec.shape}, got {value.shape}"
            )
        try:
            request.inputs[name].CopyFrom(tf.make_tensor_proto(value, dtype=spec.dtype))
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"Argument `inputs`: {name!r} must convert to {spec.dtype.name}, got {value.dtype}"
            ) from error
    return request
