"""The package's import graph, read with ``ast``: it has
no cycle, and each part imports only the parts below it, as DESIGN.md's
"Import layering" draws them.

Every import of a ``keras_rnncells`` module counts, at the top of a module or
inside a function (``if TYPE_CHECKING`` included), and so does
``importlib.import_module`` of a literal name: an import moved into a
function still makes a cycle. ``from keras_rnncells.x import y`` is an edge
to ``keras_rnncells.x.y`` where ``y`` is a module, else to
``keras_rnncells.x``; a package's ``__init__`` re-exports are edges from the
package, and so are the modules named in a package's ``_LAZY`` table (the
public names its ``__getattr__`` imports on first use).

What ``import keras_rnncells`` loads is read twice, transitively: statically,
following the imports that run at import (module level, class bodies, both
branches of an ``if``; not function bodies, not ``if TYPE_CHECKING``) from
every package ``__init__`` and every application module (``load_apps`` imports
those by name); and in a child process, from ``sys.modules``. Neither may
reach the ONNX or LiteRT writers: ``keras_rnncells.export`` names them lazily."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from keras_rnncells.defaults import APPS

PACKAGE = Path(__file__).resolve().parents[2] / "keras_rnncells"
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
    "reestimation": {"cells", "checks"},
    "rare_words": {"checks", "data"},
    "layers": {"cells", "checks"},
    "tree": {"cells", "checks", "layers"},
    "sets": {"cells", "checks", "layers", "seq2seq"},
    "text": {"checks", "defaults", "files"},
    "data": {"checks"},
    "seq2seq": {"cells", "checks", "layers", "text"},
    "training": {"checks", "data", "defaults", "files", "locks"},
    "demo": {"cells", "checks", "data", "layers", "training"},
    "distribute": {"checks", "defaults"},
    "experiments": {
        *("cells", "checks", "data", "defaults", "distribute", "layers"),
        *("locks", "metrics", "rare_words", "reestimation", "regularizers", "softmax"),
        *("training", "tree"),
    },
    "export": {"cells", "checks", "files", "layers", "locks", "seq2seq", "text", "training"},
    "apps": {
        *("cells", "checks", "data", "defaults", "export", "files", "layers"),
        *("locks", "metrics", "regularizers", "seq2seq", "text", "training", "tree"),
    },
    "analysis": {
        *("apps", "cells", "checks", "data", "files", "layers", "seq2seq", "text", "training"),
    },
}
# Modules kept from the ONNX implementation: the apps use the string front
# end's contract (export.servable), never the ONNX writers.
NO_ONNX = ("keras_rnncells.apps", "keras_rnncells.export.servable")
ONNX_MODULES = ("keras_rnncells.export.onnx",)  # onnx.py, onnx_*.py
# Loaded by no `import keras_rnncells`: the ONNX writers (onnx*.py), the
# LiteRT writer and its runner (litert*.py), and the tokenizer files they write.
WRITERS = (
    *ONNX_MODULES,
    "keras_rnncells.export.litert",
    "keras_rnncells.export.tokenizer_files",
)


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


def is_type_checking(node: ast.AST) -> bool:
    """Whether ``node`` is ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_on_import(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes of ``tree`` that run when its module is imported: all but
    function bodies (and lambdas) and ``if TYPE_CHECKING`` blocks."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if is_type_checking(node):
            todo.extend(node.orelse)
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def imported_names(node: ast.AST, package: str) -> list[str]:
    """The dotted names that ``node`` imports (any module's), as `imports_of` reads them."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:  # relative
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
            base = f"{base}.{node.module}" if node.module else base
        else:
            base = node.module or ""
        return [resolve(base, alias.name) for alias in node.names]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [node.args[0].value]
    return []


def lazy_imports(tree: ast.Module, package: str) -> Iterator[tuple[str, int]]:
    """The modules of a package's ``_LAZY`` table (public name -> module of the
    package, imported by its ``__getattr__``), each with its line."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            for value in node.value.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield f"{package}.{value.value}", value.lineno


def imports_of(name: str, on_import: bool = False) -> list[Edge]:
    """The ``keras_rnncells`` modules that module ``name`` imports, anywhere in
    it (its ``_LAZY`` table included), or (``on_import``) only those its import
    runs (`run_on_import`)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = [
        (target, node.lineno)
        for node in (run_on_import(tree) if on_import else ast.walk(tree))
        for target in imported_names(node, package)
    ]
    if not on_import and path.name == "__init__.py":
        found += lazy_imports(tree, package)
    edges = []
    for target, line in found:
        if target == ROOT or target.startswith(ROOT + "."):
            while target not in MODULES:  # `import keras_rnncells.x.name`
                target = target.rpartition(".")[0]
            if target != name:
                edges.append(Edge(name, target, line))
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


# The modules `import keras_rnncells` loads, in a child process (JSON on the last line).
LOADED = "import json, sys\nimport keras_rnncells\nprint(json.dumps(sorted(sys.modules)))\n"


def with_packages(name: str) -> list[str]:
    """``name`` and the packages above it, outermost first: importing a module
    runs their ``__init__`` first."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def load_chains(start: str, graph: dict[str, list[Edge]]) -> dict[str, list[Edge]]:
    """Every module that ``import start`` runs (transitively, packages above
    each included), with the chain of imports that first reaches it."""
    chains: dict[str, list[Edge]] = {name: [] for name in with_packages(start)}
    todo = list(chains)
    while todo:
        source = todo.pop(0)
        for edge in graph[source]:
            for target in with_packages(edge.target):
                if target not in chains:
                    chains[target] = [*chains[source], Edge(source, target, edge.line)]
                    todo.append(target)
    return chains


def import_roots() -> list[str]:
    """Where the static reading of ``import keras_rnncells`` starts: every
    package ``__init__``, and every application module of
    `keras_rnncells.defaults.APPS` (`load_apps` imports those by a name that
    is not a literal, which the reading cannot follow)."""
    packages = [name for name, path in MODULES.items() if path.name == "__init__.py"]
    return sorted({*packages, *(listing.module for listing in APPS.values())})


def test_no_package_or_application_loads_a_writer_on_import():
    graph = {name: imports_of(name, on_import=True) for name in MODULES}
    found: dict[Edge, str] = {}  # by the import that first reaches a writer: a chain to it
    for root in import_roots():
        for module, chain in load_chains(root, graph).items():
            if (
                module.startswith(WRITERS)
                and chain
                and not chain[-1].source.startswith(WRITERS)
                and chain[-1] not in found
            ):
                found[chain[-1]] = f"import {root} loads {module}:\n    " + "\n    ".join(
                    map(str, chain)
                )
    assert not found, "\n  ".join(found.values())


def test_the_import_reading_finds_what_it_looks_for():
    """A chain through a package ``__init__`` is followed; a function-level
    import, an ``if TYPE_CHECKING`` one and a ``_LAZY`` table's module are not
    run on import (the whole graph still counts them)."""
    assert with_packages("keras_rnncells.export.onnx") == [
        "keras_rnncells",
        "keras_rnncells.export",
        "keras_rnncells.export.onnx",
    ]
    graph = {
        "keras_rnncells.a": [Edge("keras_rnncells.a", "keras_rnncells.export.servable", 2)],
        "keras_rnncells": [],
        "keras_rnncells.export": [Edge("keras_rnncells.export", "keras_rnncells.export.onnx", 7)],
        "keras_rnncells.export.servable": [],
        "keras_rnncells.export.onnx": [],
    }
    chain = load_chains("keras_rnncells.a", graph)["keras_rnncells.export.onnx"]
    assert [(e.source, e.target) for e in chain] == [
        ("keras_rnncells.a", "keras_rnncells.export"),
        ("keras_rnncells.export", "keras_rnncells.export.onnx"),
    ]
    tree = ast.parse(
        "import keras_rnncells.a\n"
        "if TYPE_CHECKING:\n    import keras_rnncells.b\n"
        "class C:\n    import keras_rnncells.c\n"
        "    def f(self):\n        import keras_rnncells.d\n"
        "_LAZY = {'x': 'e'}\n"
    )
    on_import = {n for node in run_on_import(tree) for n in imported_names(node, ROOT)}
    assert on_import == {"keras_rnncells.a", "keras_rnncells.c"}
    assert [name for name, _ in lazy_imports(tree, ROOT)] == ["keras_rnncells.e"]
    export = {edge.target for edge in imports_of("keras_rnncells.export")}
    assert "keras_rnncells.export.onnx" in export  # through its _LAZY table
    assert not {edge.target for edge in imports_of("keras_rnncells.export", on_import=True)}


def test_import_keras_rnncells_loads_no_writer():
    """In a child process: no writer among the modules ``import keras_rnncells``
    loads, and each of them is one the static reading from `import_roots` finds
    (so that reading misses no import)."""
    environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", LOADED], capture_output=True, text=True, env=environ, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = [name for name in json.loads(done.stdout.splitlines()[-1]) if name in MODULES]
    assert [name for name in loaded if name.startswith(WRITERS)] == []
    graph = {name: imports_of(name, on_import=True) for name in MODULES}
    read = {name for root in import_roots() for name in load_chains(root, graph)}
    assert sorted(set(loaded) - read) == []
