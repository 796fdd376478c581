"""Architectural complexity measures of recurrent networks (Zhang, Wu, Che,
Lin, Memisevic, Salakhutdinov & Bengio 2016, "Architectural Complexity
Measures of Recurrent Neural Networks", NeurIPS).

An architecture is its cyclic graph ``G_c`` (`RecurrentGraph`): nodes, and
edges ``e = (u, v, σ(e), l(e))`` from ``u`` to ``v`` with a time delay
``σ(e) ≥ 0`` (``u`` at step ``t - σ`` feeds ``v`` at step ``t``) and a length
``l(e) ≥ 1``, the nonlinear transformations the edge applies (1 unless a
transformation stacks several layers). Unfolded over time (``G_un``), node
``v`` at step ``t`` reads ``u`` at step ``t - σ``. Every cycle must take time
(``σ(ϑ) = Σ_(e ∈ ϑ) σ(e) > 0``), else the step could not be computed. A
periodic architecture (clockwork modules) is written with one node per
phase of its period, so the graphs here need no period of their own. The
measures, with ``l(ϑ)`` and ``σ(ϑ)`` a path's summed lengths and delays:

* **recurrent depth** ``d_r = lim_(n→∞) D_i(n) / n``, ``D_i(n)`` the longest
  path from any node at step ``i`` to any node at step ``i + n``; it equals
  ``max_(ϑ cycle) l(ϑ) / σ(ϑ)`` (the paper's Theorem 3.2): the nonlinear
  transformations per time step along the deepest way through time;
* **feedforward depth** ``d_f = sup_(i, n) D*_i(n) - n d_r``, ``D*_i(n)`` the
  longest path from an input node at step ``i`` to an output node at step
  ``i + n``: the input-to-output depth beyond what time adds at rate ``d_r``.
  With every edge reweighted to ``l(e) - d_r σ(e)`` no cycle gains weight (by
  the definition of ``d_r``), and ``d_f`` is the heaviest path from an input
  to an output of ``G_c`` under these weights;
* **recurrent skip coefficient** ``s = lim_(n→∞) n / d_i(n)``, ``d_i(n)`` the
  shortest path from step ``i`` to step ``i + n``; it equals
  ``max_(ϑ cycle) σ(ϑ) / l(ϑ) = (min_ϑ l(ϑ) / σ(ϑ))^(-1)`` (Theorem 3.6):
  the steps information skips per transformation along the fastest way.

The two ratios over cycles are found exactly (`fractions.Fraction`) by
Dinkelbach's iteration: from ratio ``λ`` (0 at first), Bellman-Ford finds a
cycle of positive weight ``Σ a(e) - λ b(e)`` when there is one, whose ratio
``a(ϑ) / b(ϑ)`` is larger than ``λ`` and becomes the next ``λ``; with no such
cycle ``λ`` is the maximum. No cycle is enumerated, so dense graphs (gated
feedback over many layers) cost polynomial time.

**Our convention for cells.** A registered cell's step is one transformation:
an LSTM, a GRU or a tanh cell is one node ``h`` with the edges ``x → h``
(delay 0) and ``h → h`` (delay 1), whatever its gates, as the paper's
experiments put tanh and LSTM units alike on its graphs' edges. A cell whose
step chains transformations declares them: a class attribute
``recurrence_edges``, tuples ``(source, target, delay[, length])`` among its
nodes and ``"x"`` (its input, read at delay 0), and ``recurrence_outputs``,
the nodes its output is made of (`keras_rnncells.JordanRNNCell`: ``x → h → y``
and ``y → h`` at delay 1; `keras_rnncells.SCRNCell`: the context ``s`` beside
``h``). `cell_graph` adds the readout, one transformation from the output to
``"y"`` (the paper's single-layer RNN has ``d_f = 2``: input to hidden to
output). `connection_graph` places one cell graph per layer (or clockwork
module at each phase) and joins them as each connection of
`keras_rnncells.layers.stacks.connected_stack` does; a sum or a concatenation
joining sequences (residual, dense) is no transformation of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from keras_rnncells.cells.registry import get_cell
from keras_rnncells.checks import check_choice, check_positive_int
from keras_rnncells.layers.stacks import ALL_CONNECTIONS, LSTM_ONLY

CITATION = (
    "Zhang, Wu, Che, Lin, Memisevic, Salakhutdinov & Bengio 2016, "
    "Architectural Complexity Measures of Recurrent Neural Networks"
)
# A cell's graph unless its class declares one: one transformation per step.
DEFAULT_CELL_EDGES = (("x", "h", 0), ("h", "h", 1))
DEFAULT_CELL_OUTPUTS = ("h",)


@dataclass(frozen=True)
class Edge:
    """``source`` at step ``t - delay`` feeds ``target`` at step ``t`` through
    ``length`` nonlinear transformations."""

    source: str
    target: str
    delay: int
    length: int = 1


@dataclass(frozen=True)
class Measures:
    """``d_r``, ``d_f`` and ``s`` of a graph, exact; ``deepest_cycle`` attains
    ``d_r`` and ``fastest_cycle`` attains ``s`` (node names, first node
    repeated at the end)."""

    recurrent_depth: Fraction
    feedforward_depth: Fraction
    skip_coefficient: Fraction
    deepest_cycle: tuple[str, ...]
    fastest_cycle: tuple[str, ...]


class RecurrentGraph:
    """An architecture's cyclic graph ``G_c`` (see the module): ``edges``
    (`Edge`, or tuples ``(source, target, delay[, length])``), its ``inputs``
    and ``outputs`` (node names). Raises a ``ValueError`` naming the argument
    when a delay is negative, a length below 1, a zero-delay cycle exists, an
    input or output is no node, or no output is reachable from an input."""

    def __init__(
        self,
        edges: Iterable[Edge | Sequence],
        inputs: Sequence[str],
        outputs: Sequence[str],
    ) -> None:
        self.edges = tuple(as_edge(edge) for edge in edges)
        self.nodes = tuple(dict.fromkeys(n for e in self.edges for n in (e.source, e.target)))
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        for argument, names in (("inputs", self.inputs), ("outputs", self.outputs)):
            missing = [name for name in names if name not in self.nodes]
            if not names or missing:
                raise ValueError(
                    f"Argument `{argument}` must name nodes of the edges, received: {list(names)}"
                )
        instant = zero_delay_cycle(self.nodes, [e for e in self.edges if e.delay == 0])
        if instant:
            raise ValueError(
                "Argument `edges` must give every cycle a positive delay, received the "
                f"zero-delay cycle {' -> '.join(instant)}"
            )

    def measures(self) -> Measures:
        """The three measures (`complexity_measures`)."""
        return complexity_measures(self)


def as_edge(edge: Edge | Sequence) -> Edge:
    """An `Edge` from an `Edge` or a tuple ``(source, target, delay[, length])``."""
    if not isinstance(edge, Edge):
        if not isinstance(edge, (tuple, list)) or len(edge) not in (3, 4):
            raise ValueError(
                "Argument `edges` must hold (source, target, delay[, length]) tuples, "
                f"received: {edge!r}"
            )
        edge = Edge(*edge)
    integer = lambda value: isinstance(value, int) and not isinstance(value, bool)  # noqa: E731
    if not (isinstance(edge.source, str) and isinstance(edge.target, str)):
        raise ValueError(f"Argument `edges` must name nodes by strings, received: {edge!r}")
    if not integer(edge.delay) or edge.delay < 0:
        raise ValueError(
            f"Argument `edges` must have integer delays >= 0, received: {edge.delay!r} on {edge}"
        )
    if not integer(edge.length) or edge.length < 1:
        raise ValueError(
            f"Argument `edges` must have integer lengths >= 1, received: {edge.length!r} on {edge}"
        )
    return edge


def zero_delay_cycle(nodes: Sequence[str], edges: Sequence[Edge]) -> list[str]:
    """A cycle of ``edges`` (node names, first repeated last), or ``[]``."""
    following: dict[str, list[str]] = {node: [] for node in nodes}
    for edge in edges:
        following[edge.source].append(edge.target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in nodes:
        if root in state:
            continue
        path, stack = [], [(root, iter(following[root]))]
        state[root] = 1
        path.append(root)
        while stack:
            node, successors = stack[-1]
            for successor in successors:
                if state.get(successor) == 1:
                    return [*path[path.index(successor) :], successor]
                if successor not in state:
                    state[successor] = 1
                    path.append(successor)
                    stack.append((successor, iter(following[successor])))
                    break
            else:
                state[node] = 2
                path.pop()
                stack.pop()
    return []


def positive_cycle(
    nodes: Sequence[str], edges: Sequence[Edge], weight: Callable[[Edge], Fraction]
) -> list[Edge]:
    """A cycle of positive total ``weight`` (its edges in order), or ``[]``:
    Bellman-Ford for the heaviest paths from every node at once, and a cycle
    among the last relaxations if any edge still relaxes after ``len(nodes)``
    rounds."""
    best = {node: Fraction(0) for node in nodes}
    into: dict[str, Edge] = {}
    relaxed = None
    for _ in range(len(nodes)):
        relaxed = None
        for edge in edges:
            candidate = best[edge.source] + weight(edge)
            if candidate > best[edge.target]:
                best[edge.target], into[edge.target] = candidate, edge
                relaxed = edge.target
        if relaxed is None:
            return []
    node = relaxed
    for _ in range(len(nodes)):  # walk back into the cycle
        node = into[node].source
    cycle, current = [], node
    while True:
        edge = into[current]
        cycle.append(edge)
        current = edge.source
        if current == node:
            return cycle[::-1]


def max_cycle_ratio(
    graph: RecurrentGraph, numerator: Callable[[Edge], int], denominator: Callable[[Edge], int]
) -> tuple[Fraction, list[Edge]]:
    """``max_ϑ numerator(ϑ) / denominator(ϑ)`` over the cycles of ``graph``
    (every cycle's denominator positive) and a cycle attaining it, by
    Dinkelbach's iteration (see the module)."""
    ratio, best = Fraction(0), []
    while True:
        cycle = positive_cycle(
            graph.nodes, graph.edges, lambda e, r=ratio: numerator(e) - r * denominator(e)
        )
        if not cycle:
            break
        found = Fraction(sum(map(numerator, cycle)), sum(map(denominator, cycle)))
        if found <= ratio:  # Bellman-Ford's cycle has positive weight: never here
            raise RuntimeError(f"cycle ratio {found} does not exceed {ratio}")
        ratio, best = found, cycle
    if not best:
        raise ValueError("Argument `graph` must have a cycle (a recurrence), received none")
    return ratio, best


def heaviest_path(graph: RecurrentGraph, weight: Callable[[Edge], Fraction]) -> Fraction:
    """The heaviest path from an input to an output (no cycle of positive
    weight), by Bellman-Ford from the inputs."""
    best: dict[str, Fraction] = {node: Fraction(0) for node in graph.inputs}
    for _ in range(len(graph.nodes)):
        changed = False
        for edge in graph.edges:
            if edge.source in best:
                candidate = best[edge.source] + weight(edge)
                if edge.target not in best or candidate > best[edge.target]:
                    best[edge.target], changed = candidate, True
        if not changed:
            break
    reached = [best[node] for node in graph.outputs if node in best]
    if not reached:
        raise ValueError("Argument `graph` must have a path from an input to an output")
    return max(reached)


def cycle_nodes(cycle: Sequence[Edge]) -> tuple[str, ...]:
    """A cycle's nodes in order, its first node repeated at the end."""
    return (*(edge.source for edge in cycle), cycle[0].source)


def complexity_measures(graph: RecurrentGraph) -> Measures:
    """``d_r``, ``d_f`` and ``s`` of ``graph`` (see the module), exact."""
    depth, deepest = max_cycle_ratio(graph, lambda e: e.length, lambda e: e.delay)
    skip, fastest = max_cycle_ratio(graph, lambda e: e.delay, lambda e: e.length)
    feedforward = heaviest_path(graph, lambda e: e.length - depth * e.delay)
    return Measures(depth, feedforward, skip, cycle_nodes(deepest), cycle_nodes(fastest))


# ---------------------------------------------------------------- cells


@dataclass(frozen=True)
class CellGraph:
    """A cell's declared step (see the module): edges among ``"x"`` and its
    nodes, and the nodes its output is made of."""

    edges: tuple[Edge, ...]
    outputs: tuple[str, ...]


def declared_cell_graph(cell: str | type) -> CellGraph:
    """The graph a cell class (or registered name) declares, or the default
    one-node step; a ``ValueError`` names the class when its declaration is
    malformed."""
    cls = get_cell(cell) if isinstance(cell, str) else cell
    edges = getattr(cls, "recurrence_edges", DEFAULT_CELL_EDGES)
    outputs = tuple(getattr(cls, "recurrence_outputs", DEFAULT_CELL_OUTPUTS))
    declared = CellGraph(tuple(as_edge(edge) for edge in edges), outputs)
    nodes = {n for e in declared.edges for n in (e.source, e.target)}
    bad = [e for e in declared.edges if e.target == "x" or (e.source == "x" and e.delay)]
    if bad or not outputs or not set(outputs) <= nodes - {"x"}:
        raise ValueError(
            f"{cls.__name__}.recurrence_edges / recurrence_outputs must read 'x' at delay 0 only "
            f"and name output nodes of its edges, received: {list(edges)}, {list(outputs)}"
        )
    return declared


def place_cell(
    cell: CellGraph,
    node_at: Callable[[str, int], tuple[str, int]],
    feeds: Sequence[tuple[str, int]],
) -> list[Edge]:
    """The edges of one copy of ``cell``: ``node_at(node, steps)`` names the
    copy's ``node`` as it was ``steps`` of the cell's steps ago, with that
    delay in time steps; the cell's input ``"x"`` is replaced by ``feeds``,
    the (node, delay) pairs its input is made of."""
    placed = []
    for edge in cell.edges:
        target, _ = node_at(edge.target, 0)
        if edge.source == "x":
            placed += [Edge(node, target, delay, edge.length) for node, delay in feeds]
        else:
            source, delay = node_at(edge.source, edge.delay)
            placed.append(Edge(source, target, delay, edge.length))
    return placed


def layer_nodes(prefix: str) -> Callable[[str, int], tuple[str, int]]:
    """``node_at`` of a cell copy that steps at every time step."""
    return lambda node, steps: (f"{prefix}.{node}", steps)


def outputs_of(cell: CellGraph, prefix: str, delay: int = 0) -> list[tuple[str, int]]:
    """The feeds a copy's output makes, ``delay`` steps later."""
    return [(f"{prefix}.{node}", delay) for node in cell.outputs]


def readout(feeds: Sequence[tuple[str, int]], output: str = "y") -> list[Edge]:
    """The readout: one transformation from ``feeds`` to ``output``."""
    return [Edge(node, output, delay) for node, delay in feeds]


def cell_graph(cell: str | type) -> RecurrentGraph:
    """A registered cell (name or class) read by one readout: ``x``, the
    cell, ``y``."""
    declared = declared_cell_graph(cell)
    edges = place_cell(declared, layer_nodes("cell"), [("x", 0)])
    return RecurrentGraph(edges + readout(outputs_of(declared, "cell")), ["x"], ["y"])


# ---------------------------------------------------------- connections


def stack_graph(declared: CellGraph, layers: int, connection: str) -> RecurrentGraph:
    """``plain``, ``residual``, ``dense``, ``gated_feedback`` and
    ``depth_gated``: one cell copy per layer, ``h<k>``, fed as the
    connection feeds layer k (`keras_rnncells.StackedRNN`,
    `keras_rnncells.GatedFeedbackCell`, `keras_rnncells.DepthGatedLSTMCell`)."""
    names = [f"h{k}" for k in range(1, layers + 1)]
    edges: list[Edge] = []
    for k, name in enumerate(names):
        below = [("x", 0)] if k == 0 else outputs_of(declared, names[k - 1])
        if connection == "residual" and k > 1:  # x_(k+1) = h_k + ... + h_1
            below = [feed for j in range(k) for feed in outputs_of(declared, names[j])]
        elif connection == "dense":  # x_(k+1) = [x; h_1; ...; h_k]
            below = [("x", 0)] + [f for j in range(k) for f in outputs_of(declared, names[j])]
        elif connection == "gated_feedback":  # and every other layer's last output
            below += [f for j in range(layers) if j != k for f in outputs_of(declared, names[j], 1)]
        # depth_gated: c^(k-1)_t enters c^k_t, a same-step edge between the layers
        # the stack already joins (one node per LSTM layer)
        edges += place_cell(declared, layer_nodes(name), below)
    top = [f for j in range(layers) for f in outputs_of(declared, names[j])]
    if not (connection == "residual" and layers > 1):  # h_L + x_L = h_L + ... + h_1
        top = outputs_of(declared, names[-1])
    return RecurrentGraph(edges + readout(top), ["x"], ["y"])


def clockwork_graph(declared: CellGraph, modules: int) -> RecurrentGraph:
    """`keras_rnncells.ClockworkCell` with periods 1, 2, ..., 2^(modules-1):
    one copy of module i for each phase r of the longest period at which it
    steps (``r mod T_i = 0``), reading ``x`` and the slower modules' latest
    states; between its steps a module keeps its state (no transformation),
    so its own recurrence spans ``T_i`` steps. The readout reads every
    module's latest state at each phase."""
    periods = [2**i for i in range(modules)]
    cycle = periods[-1]

    def module_nodes(i: int, phase: int) -> Callable[[str, int], tuple[str, int]]:
        def node_at(node: str, steps: int) -> tuple[str, int]:
            return f"m{i + 1}@{(phase - steps * periods[i]) % cycle}.{node}", steps * periods[i]

        return node_at

    def latest(j: int, phase: int, before: int) -> list[tuple[str, int]]:
        """Module j's output as last computed at or before ``phase - before``."""
        delay = before + (phase - before) % periods[j]
        return [(f"m{j + 1}@{(phase - delay) % cycle}.{node}", delay) for node in declared.outputs]

    edges: list[Edge] = []
    for phase in range(cycle):
        for i in range(modules):
            if phase % periods[i] == 0:
                feeds = [(f"x@{phase}", 0)]
                feeds += [f for j in range(i + 1, modules) for f in latest(j, phase, 1)]
                edges += place_cell(declared, module_nodes(i, phase), feeds)
        top = [f for j in range(modules) for f in latest(j, phase, 0)]
        edges += readout(top, f"y@{phase}")
    phases = range(cycle)
    return RecurrentGraph(edges, [f"x@{r}" for r in phases], [f"y@{r}" for r in phases])


def grid_graph(layers: int) -> RecurrentGraph:
    """`keras_rnncells.GridLSTMCell`: block d has two LSTM transforms, along
    time (``t<d>``, the layer's state) and along depth (``d<d>``, up to the
    next block), both reading ``[t<d> at t-1; d<d-1> at t]`` (``d0 = W_in x``,
    linear, so ``x`` itself); the readout reads the top depth output."""
    edges: list[Edge] = []
    for d in range(1, layers + 1):
        below = "x" if d == 1 else f"d{d - 1}"
        for target in (f"t{d}", f"d{d}"):
            edges += [Edge(f"t{d}", target, 1), Edge(below, target, 0)]
    return RecurrentGraph(edges + readout([(f"d{layers}", 0)]), ["x"], ["y"])


def connection_graph(connection: str, cell: str = "lstm", layers: int = 3) -> RecurrentGraph:
    """The graph of ``connected_stack(connection, cell, units, layers)``
    (`keras_rnncells.layers.stacks.connected_stack`): ``layers`` layers
    (clockwork: modules) of the registered ``cell``, read by one readout."""
    check_choice("connection", connection, ALL_CONNECTIONS)
    layers = check_positive_int("layers", layers)
    if connection in LSTM_ONLY and cell != "lstm":
        raise ValueError(
            f"Argument `cell` must be 'lstm' for connection {connection!r} (it joins LSTM "
            f"memory cells), received: {cell!r}"
        )
    if connection == "grid":
        return grid_graph(layers)
    declared = declared_cell_graph(cell)
    if connection == "clockwork":
        return clockwork_graph(declared, layers)
    return stack_graph(declared, layers, connection)


def format_measure(value: Fraction) -> str:
    """``3``, ``3/2``: a measure as the paper writes it."""
    return str(value.numerator) if value.denominator == 1 else f"{value}"
