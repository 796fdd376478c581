"""The complexity measures of Zhang et al. (2016): the paper's example
architectures, a reference computed from the definitions on unfolded
graphs, our cells and connections, and the errors."""

import itertools
import random
from fractions import Fraction

import pytest

from keras_rnncells import list_cells
from keras_rnncells.analysis.complexity import (
    RecurrentGraph,
    cell_graph,
    complexity_measures,
    connection_graph,
    declared_cell_graph,
)
from keras_rnncells.analysis.complexity_table import cell_rows, connection_rows
from keras_rnncells.cli import main


def measures_of(edges, inputs=("x",), outputs=("y",)):
    found = complexity_measures(RecurrentGraph(edges, inputs, outputs))
    return found.recurrent_depth, found.feedforward_depth, found.skip_coefficient


# The paper's §4.2 architectures (its Figure 2(a)): one recurrent layer "sh",
# two stacked "st", stacked plus a bottom-up edge h1(t-1) -> h2(t) "bu", and
# stacked plus a top-down edge h2(t-1) -> h1(t) "td". The paper: "sh, st and
# bu have d_r = 1, while td has d_r = 2". Their d_f, computed by hand from
# the definition: 2, 3, 3, 3.
STACKED = [("x", "h1", 0), ("h1", "h1", 1), ("h1", "h2", 0), ("h2", "h2", 1), ("h2", "y", 0)]
PAPER_STACKS = {
    "sh": ([("x", "h", 0), ("h", "h", 1), ("h", "y", 0)], 1, 2),
    "st": (STACKED, 1, 3),
    "bu": ([*STACKED, ("h1", "h2", 1)], 1, 3),
    "td": ([*STACKED, ("h2", "h1", 1)], 2, 3),
}


@pytest.mark.parametrize("name", PAPER_STACKS)
def test_the_papers_stacks_have_its_recurrent_depths(name):
    edges, depth, feedforward = PAPER_STACKS[name]
    assert measures_of(edges) == (depth, feedforward, 1)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 9])
def test_a_skip_connection_of_k_steps_gives_s_k(k):
    # The paper's §4.4: h(t-k) -> h(t) beside h(t-1) -> h(t) gives s = k.
    edges = [("x", "h", 0), ("h", "h", 1), ("h", "h", k), ("h", "y", 0)]
    assert measures_of(edges) == (1, 2, k)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_a_skip_every_k_steps_also_gives_s_k(k):
    # Skip edges only from steps 0, k, 2k, ...: one node per phase of k.
    edges = [(f"h{r}", f"h{(r + 1) % k}", 1) for r in range(k)] + [("h0", "h0", k)]
    edges += [e for r in range(k) for e in ((f"x{r}", f"h{r}", 0), (f"h{r}", f"y{r}", 0))]
    inputs, outputs = [f"x{r}" for r in range(k)], [f"y{r}" for r in range(k)]
    assert measures_of(edges, inputs, outputs) == (1, 2, k)


def test_a_deep_transition_counts_its_layers():
    # An edge of length 3 (a 3-layer transition, Pascanu et al. 2014's DT-RNN).
    assert measures_of([("x", "h", 0), ("h", "h", 1, 3), ("h", "y", 0)]) == (3, 2, Fraction(1, 3))


# --------------------------------------------- the definitions, unfolded


def random_graph(seed):
    """Up to 4 hidden nodes, delays 0..3 (delay 0 only upward, so every cycle
    takes time), lengths 1..2, parallel edges allowed."""
    rng = random.Random(seed)
    hidden = [f"h{i}" for i in range(rng.randint(1, 4))]
    edges = [("x", hidden[0], 0), (hidden[0], hidden[0], 1), (hidden[-1], "y", 0)]
    edges += [(a, b, rng.randint(0, 2)) for a, b in itertools.pairwise(hidden)]  # x reaches y
    for _ in range(rng.randint(1, 8)):
        a, b = rng.choice(hidden), rng.choice(hidden)
        delay = rng.randint(0, 3) if hidden.index(a) < hidden.index(b) else rng.randint(1, 3)
        edges.append((a, b, delay, rng.randint(1, 2)))
    if rng.random() < 0.5:
        edges.append(("x", rng.choice(hidden), 0))
    if rng.random() < 0.5:
        edges.append((rng.choice(hidden), "y", 0))
    return [e if len(e) == 4 else (*e, 1) for e in edges]


def cycle_ratios(edges):
    """Every simple cycle's (length, delay), by enumerating node sequences."""
    nodes = sorted({n for e in edges for n in e[:2]})
    found = []
    for size in range(1, len(nodes) + 1):
        for sequence in itertools.permutations(nodes, size):
            if sequence[0] != min(sequence):
                continue
            hops = list(zip(sequence, sequence[1:] + sequence[:1]))
            choices = [[e for e in edges if e[:2] == hop] for hop in hops]
            for chosen in itertools.product(*choices):
                found.append((sum(e[3] for e in chosen), sum(e[2] for e in chosen)))
    return found


def unfolded(edges, steps, best, start):
    """Best path values over the unfolded graph: ``value[t][node]`` from the
    nodes ``start`` marks at step 0, combining with ``best`` (max or min)."""
    nodes = sorted({n for e in edges for n in e[:2]})
    value = [dict() for _ in range(steps + 1)]
    value[0] = {n: 0 for n in nodes if start(n)}
    for t in range(steps + 1):
        for _ in range(len(nodes)):  # zero-delay edges within the step, to a fixpoint
            for source, target, delay, length in edges:
                if t - delay >= 0 and source in value[t - delay]:
                    candidate = value[t - delay][source] + length
                    old = value[t].get(target)
                    value[t][target] = candidate if old is None else best(old, candidate)
    return value


@pytest.mark.parametrize("seed", range(25))
def test_the_measures_match_the_definitions_on_random_graphs(seed):
    edges = random_graph(seed)
    depth, feedforward, skip = measures_of(edges)
    ratios = cycle_ratios(edges)
    assert depth == max(Fraction(length, delay) for length, delay in ratios)
    assert skip == max(Fraction(delay, length) for length, delay in ratios)
    # d_f = sup_n D*(n) - n d_r, D*(n) the longest input-to-output path over n steps
    steps = 40
    longest = unfolded(edges, steps, max, lambda n: n == "x")
    reached = [longest[n]["y"] - n * depth for n in range(steps + 1) if "y" in longest[n]]
    assert feedforward == max(reached)
    # d_r = lim D(n)/n and s = lim n/d(n), from every node at step 0
    steps = 300
    longest = unfolded(edges, steps, max, lambda n: n != "x")
    shortest = unfolded(edges, steps, min, lambda n: n != "x")
    assert abs(max(longest[steps].values()) / steps - depth) < 0.05
    assert abs(steps / min(shortest[steps].values()) - skip) < 0.1


# ------------------------------------------------ cells and connections


def test_every_registered_cell_has_measures():
    rows = {row[0]: row[1:4] for row in cell_rows()}
    assert set(rows) == set(list_cells())
    for name in ("simple", "gru", "lstm", "mgu", "mufuru", "peephole_lstm"):
        assert rows[name] == ("1", "2", "1")  # one transformation per step
    assert rows["jordan"] == ("2", "3", "1/2")  # x -> h -> y, y back into h
    assert rows["scrn"] == ("1", "3", "1")  # x -> s -> h -> readout


@pytest.mark.parametrize("layers", [1, 2, 3, 4])
def test_the_connections_measures(layers):
    def measured(connection, cell="lstm"):
        found = connection_graph(connection, cell, layers).measures()
        return found.recurrent_depth, found.feedforward_depth, found.skip_coefficient

    for connection in ("plain", "residual", "dense", "depth_gated", "grid"):
        assert measured(connection) == (1, layers + 1, 1)
    # every layer reads every layer's last state: h_L(t-1) -> h_1(t) -> ... -> h_L(t)
    assert measured("gated_feedback") == (layers, layers + 1, 1)
    # the slowest module's recurrence spans 2^(L-1) steps through one transformation
    assert measured("clockwork") == (1, 2, 2 ** (layers - 1))
    # a stack of Jordan cells: each layer's cycle h -> y -> h
    assert measured("plain", "jordan") == (2, 2 * layers + 1, Fraction(1, 2))


def test_rnncells_cells_complexity_prints_both_tables(capsys):
    main(["cells", "--complexity", "--layers", "2"])
    printed = capsys.readouterr().out
    lines = {line.split()[0]: line.split() for line in printed.splitlines() if line.strip()}
    assert lines["jordan"][1:4] == ["2", "3", "1/2"]
    assert lines["gated_feedback"][1:6] == ["lstm", "2", "2", "3", "1"]
    assert lines["clockwork"][3:6] == ["1", "2", "2"]


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "edges, inputs, outputs, message",
    [
        ([("x", "h", 0), ("h", "h", -1), ("h", "y", 0)], ["x"], ["y"], "delays >= 0"),
        ([("x", "h", 0), ("h", "h", 1, 0), ("h", "y", 0)], ["x"], ["y"], "lengths >= 1"),
        ([("x", "h", 0), ("h", "h", 1)], ["x"], ["y"], "`outputs` must name nodes"),
        ([("x", "h", 0), ("h", "h", 1), ("h", "y", 0)], [], ["y"], "`inputs` must name nodes"),
        ([("x", "a", 0), ("a", "b", 0), ("b", "a", 0), ("b", "y", 0)], ["x"], ["y"], "a -> b"),
        ([("x", "h")], ["x"], ["y"], r"\(source, target, delay\[, length\]\)"),
    ],
)
def test_malformed_graphs_are_refused_in_one_line(edges, inputs, outputs, message):
    with pytest.raises(ValueError, match=message) as raised:
        RecurrentGraph(edges, inputs, outputs)
    assert "\n" not in str(raised.value)


def test_graphs_without_a_cycle_or_a_path_are_refused():
    with pytest.raises(ValueError, match="must have a cycle"):
        measures_of([("x", "h", 0), ("h", "y", 0)])
    with pytest.raises(ValueError, match="path from an input to an output"):
        measures_of([("x", "h", 0), ("h", "h", 1), ("y", "z", 0)], outputs=("y",))


def test_bad_connection_arguments():
    with pytest.raises(ValueError, match="Argument `connection` must be one of"):
        connection_graph("nope")
    with pytest.raises(ValueError, match="Argument `layers` must be a positive integer"):
        connection_graph("plain", "lstm", 0)
    with pytest.raises(ValueError, match="Argument `cell` must be 'lstm' for connection 'grid'"):
        connection_graph("grid", "gru")
    with pytest.raises(ValueError, match="Argument `stack_cell` must be one of"):
        connection_rows(2, "nope")


def test_a_malformed_cell_declaration_names_the_class():
    class Reads:
        recurrence_edges = (("x", "h", 1), ("h", "h", 1))

    with pytest.raises(ValueError, match=r"Reads.recurrence_edges"):
        declared_cell_graph(Reads)
    assert cell_graph("lstm").measures().recurrent_depth == 1
