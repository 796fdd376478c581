"""The generative RNNG (Dyer et al. 2016) against a chain LSTM language model
of about the same number of parameters, on the logic task's tree formulas.

Each formula of ``logic(shape="tree")`` (postfix tokens) becomes its tree,
``(AND T (OR F T))``, nonterminals the gates and terminals T/F, and the tree
its top-down actions ``NT(X) GEN(w) REDUCE`` (`keras_rnncells.tree.oracle`).
Both models score the same sequence, so both give the joint ``p(x, y)``:

* the RNNG (`keras_rnncells.tree.RNNG`): stack, terminals and history LSTMs,
  REDUCE composing with a bidirectional LSTM, the softmax over the valid
  actions;
* the LSTM language model: the linearized tree, one token per action
  (``(AND``, ``T``, ``)``), read left to right from a start token; it must
  learn the brackets' balance itself (its softmax is over every action).

Perplexities are ``exp(-Σ log p(x, y) / D)`` over a split, with ``D`` the
number of actions (tokens of the linearized tree) or the number of words
(terminals, the paper's denominator), the same ``D`` for both models. The
generator's own probability of each formula (its gate count uniform, the
split of the gates between the two operands uniform, the gates and the
leaves uniform) is the floor no model can beat on average, given as a row.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/rnng.py --out results/rnng_logic
    PYTHONPATH=. python benchmarks/rnng.py --out /tmp/rnng --quick   # a minute
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import json

import keras
import numpy as np
from keras import ops

import keras_rnncells as kr
from keras_rnncells.apps.grammar import (
    LOGIC_SPACE,
    count_words,
    logic_trees,
    negative_log_likelihood,
    padded_actions,
)
from keras_rnncells.data.logic import GATES
from keras_rnncells.files import write_atomically, write_json
from keras_rnncells.tree import RNNG, Tree

SPACE = LOGIC_SPACE
SPLITS = ("validation", "test")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the report's directory")
    parser.add_argument("--quick", action="store_true", help="tiny models and data, 1 epoch")
    parser.add_argument("--units", type=int, default=32, help="the RNNG's LSTM units")
    parser.add_argument("--embedding-dim", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train-size", type=int, default=4000)
    parser.add_argument("--eval-size", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        args.units, args.embedding_dim, args.epochs = 4, 4, 1
        args.train_size, args.eval_size, args.batch_size = 64, 32, 32
    return args


# -- data ---------------------------------------------------------------------------


def generator_log_probability(tree: Tree, gate_range: tuple[int, int]) -> float:
    """log p of ``tree`` under `keras_rnncells.data.logic.random_formula`'s
    tree shape: the gate count uniform in ``gate_range``, then per node a
    uniform gate and a uniform split of the other gates, leaves uniform."""

    def nodes(node: Tree) -> tuple[int, float]:  # (gates, log p given the gate count)
        if isinstance(node, str):
            return 0, math.log(1 / 2)
        (left_gates, left), (right_gates, right) = nodes(node[1]), nodes(node[2])
        gates = left_gates + right_gates + 1
        return gates, left + right + math.log(1 / len(GATES)) + math.log(1 / gates)

    _, log_p = nodes(tree)
    return log_p - math.log(gate_range[1] - gate_range[0] + 1)


# -- the models ---------------------------------------------------------------------


def rnng_model(args: argparse.Namespace) -> keras.Model:
    actions = keras.Input((None,), dtype="int32", name="actions")
    layer = RNNG(
        len(SPACE.nonterminals), len(SPACE.terminals), args.units, args.embedding_dim, name="rnng"
    )
    return keras.Model(actions, layer(actions), name="rnng")


def lstm_model(units: int, embedding_dim: int) -> keras.Model:
    """The chain LSTM LM over the actions (a start token, id ``SPACE.size``,
    in front): each step's log p of the next action, zero at padding."""
    actions = keras.Input((None,), dtype="int32", name="actions")
    start = ops.full_like(actions[:, :1], SPACE.size)
    inputs = ops.concatenate([start, actions[:, :-1]], axis=1)
    hidden = kr.LSTM(units, return_sequences=True)(
        keras.layers.Embedding(SPACE.size + 1, embedding_dim)(inputs)
    )
    log_p = ops.log_softmax(keras.layers.Dense(SPACE.size - 1)(hidden))
    targets = ops.maximum(actions - 1, 0)
    chosen = ops.take_along_axis(log_p, ops.expand_dims(targets, -1), axis=-1)[..., 0]
    return keras.Model(actions, chosen * ops.cast(actions > 0, chosen.dtype), name="lstm")


def lstm_units_like(parameters: int, embedding_dim: int) -> int:
    """The LSTM LM's units whose parameter count is nearest ``parameters``."""

    def count(units: int) -> int:
        embedding = (SPACE.size + 1) * embedding_dim
        return embedding + 4 * units * (embedding_dim + units + 1) + (units + 1) * (SPACE.size - 1)

    return min(range(1, 4096), key=lambda units: abs(count(units) - parameters))


def train_and_score(
    name: str, model: keras.Model, data: dict, args: argparse.Namespace, run_dir: Path
) -> dict:
    """Trains ``model`` (or reads its finished run) and sums its log p per split."""
    done = run_dir / "results.json"
    if done.exists():
        print(f"{name}: finished run in {run_dir}")
        return json.loads(done.read_text(encoding="utf-8"))
    keras.utils.set_random_seed(args.seed)
    model.compile(
        keras.optimizers.Adam(3e-3, clipnorm=5.0), negative_log_likelihood, jit_compile=False
    )
    train = data["train"]
    started = time.perf_counter()
    history = model.fit(
        train,
        np.zeros((len(train), 1), "float32"),
        batch_size=args.batch_size,
        epochs=args.epochs,
        verbose=2,
    )
    seconds = time.perf_counter() - started
    results = {
        "parameters": int(model.count_params()),
        "seconds_per_epoch": seconds / args.epochs,
        "train_loss": [float(x) for x in history.history["loss"]],
    }
    for split in SPLITS:
        log_p = model.predict(data[split], batch_size=args.batch_size, verbose=0)
        results[split] = float(np.sum(log_p, dtype="float64"))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(done, results)
    return results


# -- the report ---------------------------------------------------------------------


def perplexity(log_p: float, count: int) -> float:
    return math.exp(-log_p / count)


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    trees = logic_trees(args.seed, args.train_size, args.eval_size, args.eval_size, args.batch_size)
    data = {split: padded_actions(SPACE, split_trees) for split, split_trees in trees.items()}
    counts = {
        split: {
            "actions": int((data[split] > 0).sum()),
            "words": sum(map(count_words, trees[split])),
        }
        for split in SPLITS
    }
    rnng = rnng_model(args)
    parameters = rnng.count_params()
    lstm_units = lstm_units_like(parameters, args.embedding_dim)
    models = {"RNNG": rnng, "LSTM LM": lstm_model(lstm_units, args.embedding_dim)}
    runs = args.out / "runs" / ("quick" if args.quick else "full")
    results = {
        name: train_and_score(name, model, data, args, runs / name.replace(" ", "_").lower())
        for name, model in models.items()
    }
    ranges = {"validation": (5, 10), "test": (11, 20)}
    results["generator (floor)"] = {
        split: sum(generator_log_probability(tree, ranges[split]) for tree in trees[split])
        for split in SPLITS
    }
    rows = []
    for name, result in results.items():
        row = {"model": name, "parameters": result.get("parameters")}
        row["seconds_per_epoch"] = result.get("seconds_per_epoch")
        for split in SPLITS:
            for unit in ("actions", "words"):
                row[f"{split}_{unit}"] = perplexity(result[split], counts[split][unit])
        rows.append(row)
    write_section(args, rows, counts, lstm_units)
    return rows


def write_section(
    args: argparse.Namespace, rows: list[dict], counts: dict, lstm_units: int
) -> None:
    by_name = {row["model"]: row for row in rows}
    rnng, lstm = by_name["RNNG"], by_name["LSTM LM"]
    met = all(rnng[f"{s}_actions"] < lstm[f"{s}_actions"] for s in SPLITS)
    header = (
        "| model | parameters | s/epoch | ppl/action (5-10 gates) | ppl/word (5-10) "
        "| ppl/action (11-20 gates) | ppl/word (11-20) | ppl/action vs LSTM (5-10, 11-20) |"
    )
    lines = [header, "|" + "---|" * 8]
    for row in rows:
        ratios = " / ".join(f"{row[f'{s}_actions'] / lstm[f'{s}_actions']:.3f}" for s in SPLITS)
        seconds = row["seconds_per_epoch"]
        lines.append(
            f"| {row['model']} | {row['parameters'] or '-'} "
            f"| {'-' if seconds is None else f'{seconds:.0f}'} "
            + "".join(f"| {row[f'{s}_{u}']:.3f} " for s in SPLITS for u in ("actions", "words"))
            + f"| {ratios} |"
        )
    command = "PYTHONPATH=. python benchmarks/rnng.py --out results/rnng_logic"
    scale = (
        f"RNNG units {args.units}, embeddings {args.embedding_dim}; LSTM LM {lstm_units} units, "
        f"embeddings {args.embedding_dim}; {args.train_size} training formulas (5-10 gates), "
        f"{args.epochs} epochs of Adam (3e-3, clipnorm 5), batch {args.batch_size}, seed "
        f"{args.seed}; {args.eval_size} held-out formulas of 5-10 gates "
        f"({counts['validation']['actions']} actions, {counts['validation']['words']} words) "
        f"and {args.eval_size} of 11-20 gates ({counts['test']['actions']} actions, "
        f"{counts['test']['words']} words); 2 shared CPU cores."
        + (" **Quick run (--quick): tiny models, 1 epoch.**" if args.quick else "")
    )
    section = [
        "## Recurrent Neural Network Grammars (Dyer et al. 2016) on the logic task's trees",
        "",
        "- Paper: the generative RNNG models language better than a sequential LSTM LM "
        "(English PTB §23, test perplexity per word 102.4 against 113.4, Table 4; there of the "
        "marginal p(x), estimated by importance sampling from a discriminative parser).",
        "- Here: both models score the joint p(x, y) of each formula and its tree (the trees "
        "are known): the RNNG by its top-down actions, the LSTM LM by the linearized tree "
        "(one token per action: `(AND`, `T`, `)`). Perplexity = exp(-Σ log p(x, y) / D), D = "
        "the actions (tokens of the linearized tree) or the words (terminals T/F, the "
        "paper's denominator), the same D for every row. The generator's row is each "
        "formula's probability under the task's own random process: the floor.",
        f"- Target: the RNNG's perplexity below the LSTM LM's on both held-out sets: "
        f"{'met' if met else '**not met**'}.",
        "",
        *lines,
        "",
        f"Scale: {scale}",
        "",
        "Notes: one seed, so a margin of a few percent is not shown to be more than a "
        "seed's variation. The RNNG normalizes over the valid actions only (as the paper's "
        "implementation does), so the brackets' balance is given to it; the LSTM LM learns "
        "it. At 11-20 gates both models are past their training lengths, and the floor "
        "assumes the generator's 11-20 gate-count prior, which the models never saw (they "
        "learned when formulas of 5-10 gates end), so part of every model's gap there is "
        "that prior. The s/epoch column is wall time on 2 cores shared with other jobs.",
        "",
        f"Reproduce: `{command}` (finished runs are read back from `runs/`).",
        "",
    ]
    print("\n".join(lines))
    write_atomically(
        args.out / "section.md",
        lambda path: Path(path).write_text("\n".join(section), encoding="utf-8"),
    )


if __name__ == "__main__":
    main()
