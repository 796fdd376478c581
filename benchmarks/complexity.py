"""The complexity measures of Zhang et al. (2016) on the paper's own example
architectures, against the values the paper states, and the measures of the
package's cells and connections (`keras_rnncells.analysis.complexity`).

    python benchmarks/complexity.py --out results/complexity [--quick]

Nothing is trained: the measures are computed from each architecture's
cyclic graph, in well under a second (``--quick`` changes nothing but is
accepted like every scripted experiment). Writes ``OUT/section.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from keras_rnncells.analysis.complexity import (
    CITATION,
    RecurrentGraph,
    format_measure,
)
from keras_rnncells.analysis.complexity_table import HEADERS, cell_rows, connection_rows
from keras_rnncells.files import write_atomically

STACKED = [("x", "h1", 0), ("h1", "h1", 1), ("h1", "h2", 0), ("h2", "h2", 1), ("h2", "y", 0)]
SKIPS = (2, 4, 8)
LAYERS = 3


def skip_graph(k: int) -> RecurrentGraph:
    """§4.4: a recurrent layer with h(t-k) -> h(t) beside h(t-1) -> h(t)."""
    edges = [("x", "h", 0), ("h", "h", 1), ("h", "h", k), ("h", "y", 0)]
    return RecurrentGraph(edges, ["x"], ["y"])


# (architecture, its graph, the measure the paper states, the paper's value, where)
PAPER_EXAMPLES = [
    ("sh", RecurrentGraph([("x", "h", 0), ("h", "h", 1), ("h", "y", 0)], ["x"], ["y"]), "d_r", 1),
    ("st", RecurrentGraph(STACKED, ["x"], ["y"]), "d_r", 1),
    ("bu", RecurrentGraph([*STACKED, ("h1", "h2", 1)], ["x"], ["y"]), "d_r", 1),
    ("td", RecurrentGraph([*STACKED, ("h2", "h1", 1)], ["x"], ["y"]), "d_r", 2),
    *[(f"skip k={k}", skip_graph(k), "s", k) for k in SKIPS],
]
WHERE = {"d_r": "§4.2, Fig. 2(a)", "s": "§4.4"}


def example_rows() -> list[tuple[str, ...]]:
    """One row per paper example: architecture, measure, the paper's value,
    ours, all three measures of ours, and whether ours is the paper's."""
    rows = []
    for name, graph, measure, paper in PAPER_EXAMPLES:
        found = graph.measures()
        values = {
            "d_r": found.recurrent_depth,
            "d_f": found.feedforward_depth,
            "s": found.skip_coefficient,
        }
        every = ", ".join(f"{key} = {format_measure(value)}" for key, value in values.items())
        met = "met" if values[measure] == paper else "**not met**"
        rows.append(
            (name, WHERE[measure], measure, str(paper), format_measure(values[measure]), every, met)
        )
    return rows


def markdown(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """A markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def section(examples: list[tuple[str, ...]]) -> str:
    """``section.md``: the paper's claim, the target, the three tables, the command."""
    met = all(row[-1] == "met" for row in examples)
    lines = [
        "## Architectural complexity measures (Zhang et al. 2016)",
        "",
        f"- Paper: {CITATION} (NeurIPS 2016). §4.2: of its four two-level architectures "
        "sh (one recurrent layer), st (two stacked), bu (stacked, plus h1(t-1) -> h2(t)) and "
        "td (stacked, plus h2(t-1) -> h1(t)), sh, st and bu have d_r = 1 and td has "
        "d_r = 2; §4.4: a skip connection h(t-k) -> h(t) gives the recurrent skip "
        "coefficient s = k.",
        "- Target: our measures, computed from each example's cyclic graph (written from "
        "the paper's description), equal the paper's values: "
        + ("met" if met else "**not met**")
        + ".",
        "- Definitions (the paper's Theorems 3.2 and 3.6): d_r = max over cycles of "
        "length / delay; s = max over cycles of delay / length; d_f = sup over n of the "
        "longest input-to-output path across n steps minus n d_r. The d_f of the examples "
        "is ours (the paper does not state it for them).",
        "",
        *markdown(
            ("architecture", "paper", "measure", "paper's value", "ours", "all ours", "result"),
            examples,
        ),
        "",
        "The package's cells, each read by one readout (a cell's step counts as one "
        "transformation whatever its gates; Jordan's and SCRN's cells declare their "
        "two-node steps):",
        "",
        *markdown(("cell", *HEADERS), cell_rows()),
        "",
        f"The connections of `connected_stack` at {LAYERS} layers of LSTM cells "
        "(clockwork: modules of periods 1, 2, 4). Residual and dense connections add "
        "shorter paths, which none of the three measures reads; gated feedback raises d_r "
        "to the number of layers; clockwork raises s to the slowest period:",
        "",
        *markdown(("connection", "cell", "layers", *HEADERS), connection_rows(LAYERS, "lstm")),
        "",
        "Scale: no training; exact fractions from the graphs. Reproduce: "
        "`python benchmarks/complexity.py --out results/complexity` or "
        "`rnncells cells --complexity --layers 3`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/complexity"))
    parser.add_argument("--quick", action="store_true", help="accepted; changes nothing")
    args = parser.parse_args(argv)
    examples = example_rows()
    text = section(examples)
    print(text)
    write_atomically(args.out / "section.md", lambda path: Path(path).write_text(text, "utf-8"))


if __name__ == "__main__":
    main()
