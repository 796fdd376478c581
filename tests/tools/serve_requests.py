"""The request loop the child-process tools share (stock_server.py, onnx_runner.py).

``python TOOL.py REQUEST.json`` runs one request and exits. ``python TOOL.py
--serve`` stays up, as a model server does: it reads the path of one request
a line from stdin, runs it, and writes ``done`` on a line of its own to the
stdout it started with (whatever else the request prints goes to stderr), so
that the test suite pays the tool's imports (TensorFlow: seconds) once per
worker, not once per request. Each request starts with no model loaded
(``reset``), as a freshly started tool would; the tools never import
keras_rnncells, so a request cannot leave the package's state behind.
"""

import os
import sys
from collections.abc import Callable

DONE = "done"


def main(run_request: Callable[[str], None], reset: Callable[[], None]) -> None:
    """Runs ``sys.argv[1]``, or with ``--serve`` every request named on stdin."""
    if sys.argv[1:] != ["--serve"]:
        reset()
        run_request(sys.argv[1])
        return
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr
    for line in sys.stdin:
        reset()
        run_request(line.rstrip("\n"))
        answers.write(f"{DONE}\n")
        answers.flush()
