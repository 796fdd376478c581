"""Runs LiteRT models as a phone's app runs them: ``ai_edge_litert``'s
interpreter, no TensorFlow.

This module imports only the standard library, numpy and ``ai_edge_litert``,
so it is also the program ``write_litert`` runs in a fresh Python process (its
source passed with ``-c``) to check an export where TensorFlow cannot be
imported: there, ``import tensorflow`` raises ``ImportError``. The program
reads a JSON list of jobs ``{"model", "signature", "inputs", "outputs"}``
(``inputs`` an ``.npz`` path, ``outputs`` an ``.npz`` path to write), runs
each model's signature on the inputs, resized to their shapes, and writes
the outputs; it also writes ``<model>.ops.json``, the model's op list
(`model_ops`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np


def run_signature(
    model: str | os.PathLike | bytes,
    inputs: dict[str, np.ndarray],
    signature: str = "serving_default",
    num_threads: int | None = None,
) -> dict[str, np.ndarray]:
    """The outputs, by name, of ``signature`` of a ``.tflite`` model (a path or
    its bytes) on ``inputs`` (arrays by input name, of any batch and length:
    the interpreter resizes its inputs to theirs)."""
    from ai_edge_litert.interpreter import Interpreter

    source = {"model_content": model} if isinstance(model, bytes) else {"model_path": str(model)}
    interpreter = Interpreter(**source, num_threads=num_threads)
    runner = interpreter.get_signature_runner(signature)
    outputs = runner(**{name: np.asarray(value) for name, value in inputs.items()})
    return {name: np.asarray(value) for name, value in outputs.items()}


def model_ops(model: str | os.PathLike | bytes) -> list[str]:
    """The ops of every subgraph of a ``.tflite`` model (a loop's body too),
    sorted: builtin ops by name (``"WHILE"``, ``"UNIDIRECTIONAL_SEQUENCE_LSTM"``),
    custom ops (Flex ops among them) as ``"CUSTOM:<name>"``."""
    from ai_edge_litert import schema_py_generated as schema

    content = model if isinstance(model, bytes) else open(model, "rb").read()
    root = schema.Model.GetRootAsModel(content, 0)
    builtin = {
        value: name for name, value in vars(schema.BuiltinOperator).items() if name.isupper()
    }
    codes = []
    for index in range(root.OperatorCodesLength()):
        code = root.OperatorCodes(index)
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if number == schema.BuiltinOperator.CUSTOM:
            codes.append(f"CUSTOM:{code.CustomCode().decode()}")
        else:
            codes.append(builtin[number])
    used = set()
    for graph_index in range(root.SubgraphsLength()):
        graph = root.Subgraphs(graph_index)
        for op_index in range(graph.OperatorsLength()):
            used.add(codes[graph.Operators(op_index).OpcodeIndex()])
    return sorted(used)


def main(request_path: str) -> None:
    jobs: list[dict[str, Any]] = json.loads(open(request_path, encoding="utf-8").read())
    for job in jobs:
        with np.load(job["inputs"], allow_pickle=False) as loaded:
            inputs = dict(loaded)
        outputs = run_signature(job["model"], inputs, job["signature"])
        np.savez(job["outputs"], **outputs)
        with open(f"{job['outputs']}.ops.json", "w", encoding="utf-8") as file:
            json.dump(model_ops(job["model"]), file)


if __name__ == "__main__":
    sys.modules["tensorflow"] = None  # as on a phone: `import tensorflow` fails
    main(sys.argv[1])
