"""The package's import graph, read with ``ast`` (nothing is imported): it has
no cycle, and each part imports only the parts below it, as DESIGN.md's
"Import layering" draws them.

Every import of a ``keras_rnncells`` module counts, at the top of a module or
inside a function (``if TYPE_CHECKING`` included), and so does
``importlib.import_module`` of a literal name: an import moved into a
function still makes a cycle. ``from keras_rnncells.x import y`` is an edge
to ``keras_rnncells.x.y`` where ``y`` is a module, else to
``keras_rnncells.x``; a package's ``__init__`` re-exports are edges from the
package."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "keras_rnncells"
ROOT = "keras_rnncells"

# What each part may import (a part: a subpackage or a top-level module,
# named without "keras_rnncells."). "*": anything. Parts of one subpackage
# may import each other (the graph must stay acyclic all the same).
ALLOWED: dict[str, set[str] | str] = {
    "": "*",  # keras_rnncells/__init__.py
    "_api": "*",
    "cli": "*",
    "cli_runtime": set(),  # no TensorFlow, no other part: what the command runs under
    "checks": set(),
    "files": set(),
    "locks": set(),
    # the flags' value types; the cell type imports the cells when it parses
    "flags": {"cells", "cli_runtime"},
    "defaults": {"flags"},
    "regularizers": {"checks"},
    "metrics": set(),
    "softmax": {"checks", "defaults"},
    "cells": {"checks"},
    "layers": {"cells", "checks"},
    "tree": {"cells", "checks", "layers"},
    "text": {"checks", "defaults", "files"},
    "data": {"checks"},
    "seq2seq": {"cells", "checks", "layers", "text"},
    "training": {"checks", "data", "defaults", "files", "locks"},
    "demo": {"cells", "checks", "data", "layers", "training"},
    "distribute": {"checks", "defaults"},
    "experiments": {
        *("cells", "checks", "data", "defaults", "distribute", "layers"),
        *("locks", "metrics", "regularizers", "softmax", "training", "tree"),
    },
    "export": {"cells", "checks", "files", "layers", "locks", "seq2seq", "text", "training"},
    "apps": {
        *("cells", "checks", "data", "defaults", "export", "files", "layers"),
        *("locks", "metrics", "regularizers", "seq2seq", "text", "training"),
    },
    "analysis": {
        *("apps", "cells", "checks", "data", "files", "layers", "seq2seq", "text", "training"),
    },
}
# Modules kept from the ONNX implementation: the apps use the string front
# end's contract (export.servable), never the ONNX writers.
NO_ONNX = ("keras_rnncells.apps", "keras_rnncells.export.servable")
ONNX_MODULES = ("keras_rnncells.export.onnx",)  # onnx.py, onnx_*.py


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({module_path(self.source)}:{self.line})"


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = module_files()


def module_path(name: str) -> str:
    return str(MODULES[name].relative_to(PACKAGE.parent))


def resolve(base: str, name: str | None) -> str:
    """``base.name`` if it is a module, else ``base``."""
    if name is not None and f"{base}.{name}" in MODULES:
        return f"{base}.{name}"
    return base


def imports_of(name: str) -> list[Edge]:
    """The ``keras_rnncells`` modules that module ``name`` imports, anywhere in it."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [resolve(base, alias.name) for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            if target == ROOT or target.startswith(ROOT + "."):
                while target not in MODULES:  # `import keras_rnncells.x.name`
                    target = target.rpartition(".")[0]
                if target != name:
                    edges.append(Edge(name, target, node.lineno))
    return edges


def import_graph() -> dict[str, list[Edge]]:
    return {name: imports_of(name) for name in MODULES}


def find_cycle(graph: dict[str, list[Edge]]) -> list[Edge] | None:
    """A cycle of ``graph`` as its edges, or ``None``."""
    state: dict[str, str] = {}  # "open" while on the path, then "done"
    path: list[Edge] = []

    def visit(name: str) -> list[Edge] | None:
        state[name] = "open"
        for edge in graph[name]:
            if state.get(edge.target) == "open":  # on the path: it closes a cycle
                start = next(i for i, e in enumerate(path) if e.source == edge.target)
                return [*path[start:], edge]
            if edge.target not in state:
                path.append(edge)
                found = visit(edge.target)
                if found:
                    return found
                path.pop()
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def part(name: str) -> str:
    """The layering part of a module: its subpackage or top-level module."""
    return name.split(".")[1] if "." in name else ""


def layering_violations(graph: dict[str, list[Edge]]) -> list[str]:
    found = []
    for edges in graph.values():
        for edge in edges:
            source, target = part(edge.source), part(edge.target)
            allowed = ALLOWED.get(source)
            if allowed is None:
                found.append(f"{module_path(edge.source)}: part {source!r} has no layering rule")
            elif source != target and allowed != "*" and target not in allowed:
                found.append(f"{edge}: {source!r} may import only {sorted(allowed)}")
            elif edge.source.startswith(NO_ONNX) and edge.target.startswith(ONNX_MODULES):
                found.append(f"{edge}: {edge.source} must not import the ONNX implementation")
    return sorted(set(found))


def test_imports_are_resolved_to_modules():
    assert {"keras_rnncells", "keras_rnncells.cli", "keras_rnncells.export.servable"} <= set(
        MODULES
    )
    targets = {edge.target for edge in imports_of("keras_rnncells.export.onnx")}
    assert {"keras_rnncells.export.onnx_text", "keras_rnncells.files"} <= targets
    # `from keras_rnncells import apps, cells, ...`: the subpackages themselves
    assert "keras_rnncells.apps" in {edge.target for edge in imports_of("keras_rnncells._api")}


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle (function-level imports count):\n  " + "\n  ".join(
        map(str, cycle)
    )


def test_each_part_imports_only_the_parts_below_it():
    violations = layering_violations(import_graph())
    assert not violations, "imports against the layering of DESIGN.md:\n  " + "\n  ".join(
        violations
    )


def test_the_graph_checks_find_what_they_look_for():
    """A cycle through a function-level import, a relative import, and an
    import against the layering are each found and named."""
    graph = {
        "keras_rnncells.a": [Edge("keras_rnncells.a", "keras_rnncells.b", 3)],
        "keras_rnncells.b": [Edge("keras_rnncells.b", "keras_rnncells.c", 5)],
        "keras_rnncells.c": [Edge("keras_rnncells.c", "keras_rnncells.b", 9)],
    }
    cycle = find_cycle(graph)
    assert [(e.source, e.target) for e in cycle] == [
        ("keras_rnncells.b", "keras_rnncells.c"),
        ("keras_rnncells.c", "keras_rnncells.b"),
    ]
    assert find_cycle({"keras_rnncells.a": [], "keras_rnncells.b": []}) is None
    edge = Edge("keras_rnncells.cells.gru", "keras_rnncells.export.servable", 1)
    (found,) = layering_violations({"keras_rnncells.cells.gru": [edge]})
    assert "'cells' may import only ['checks']" in found and "cells/gru.py:1" in found
