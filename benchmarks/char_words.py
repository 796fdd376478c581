"""Words from characters on PTB at equal parameters: a word's input vector
from an embedding ("words"), from its characters by a char-CNN with a
highway layer (Kim et al. 2016, "chars"), or both mixed by a gate (Miyamoto
& Cho 2016, "words+chars"); test perplexity overall and on rare words.

The words model's embedding size is given (``--embedding-dim``); each other
input's size (the char-CNN's filters in all, and the embedding's for the
gated mix) is the one whose model's trainable parameters come nearest the
words model's (`equal_parameters.matching_size`). Rare words: the test
positions whose target word occurs fewer than 10 times as a training target
of the run (`keras_rnncells.rare_words`).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/char_words.py --out results/ptb_char_words
    PYTHONPATH=. python benchmarks/char_words.py --out /tmp/cw --quick   # a tiny run
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.equal_parameters import (
    markdown_table,
    matching_size,
    model_parameters,
    train_command,
    trained,
    write_section,
)
from keras_rnncells.data import load_task
from keras_rnncells.defaults import WORD_INPUTS

TITLE = "## Words from characters: PTB perplexity at equal parameters"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/ptb_char_words"))
    parser.add_argument("--cell", default="gru")
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--embedding-dim", type=int, default=64, help="the words model's")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=50000, help="tokens kept per split")
    parser.add_argument("--quick", action="store_true", help="a tiny run (seconds of training)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    if args.quick:
        args.units, args.embedding_dim, args.epochs, args.limit = 8, 8, 1, 1500
    task = load_task("ptb", limit=args.limit)
    common = {"cell": args.cell, "units": args.units, "layers": args.layers}

    def count(word_input: str, dim: int) -> int:
        options = {"layers": args.layers, "embedding_dim": dim, "word_input": word_input}
        return model_parameters(task, args.cell, args.units, **options)

    target = count("words", args.embedding_dim)
    dims = {"words": args.embedding_dim}
    for word_input in WORD_INPUTS[1:]:
        dims[word_input] = matching_size(lambda d, w=word_input: count(w, d), target, 6, 4096)
    rows = []
    for word_input in WORD_INPUTS:
        flags = {
            **common,
            "epochs": args.epochs,
            "limit": args.limit,
            "word_input": word_input,
            "embedding_dim": dims[word_input],
        }
        run_dir = args.out / "runs" / word_input.replace("+", "_")
        results = trained("ptb", run_dir, flags)
        test = results["test"]
        rows.append(
            {
                "word_input": word_input,
                "embedding_dim": dims[word_input],
                "parameters": results["parameters"],
                "perplexity": test["perplexity"],
                "rare_perplexity": test["rare_perplexity"],
                "rare_tokens": test["rare_tokens"],
                "rare_fraction": test["rare_fraction"],
                "command": " ".join(train_command("ptb", run_dir, flags)),
            }
        )
    write_section(args.out, section(rows, args))
    return rows


def section(rows: list[dict], args: argparse.Namespace) -> list[str]:
    words = rows[0]
    table = markdown_table(
        [
            "word input",
            "size",
            "parameters",
            "× words",
            "test perplexity",
            "× words",
            "rare-word perplexity",
            "× words",
        ],
        [
            [
                f"`{row['word_input']}`",
                row["embedding_dim"],
                f"{row['parameters']:,}",
                f"{row['parameters'] / words['parameters']:.3f}",
                f"{row['perplexity']:.1f}",
                f"{row['perplexity'] / words['perplexity']:.3f}",
                f"{row['rare_perplexity']:.1f}",
                f"{row['rare_perplexity'] / words['rare_perplexity']:.3f}",
            ]
            for row in rows
        ],
    )
    better = all(row["perplexity"] < words["perplexity"] for row in rows[1:])
    rare_better = all(row["rare_perplexity"] < words["rare_perplexity"] for row in rows[1:])
    met = "met" if better and rare_better else "**not met**"
    return [
        TITLE,
        "",
        "- Paper: Kim et al. (2016), PTB test perplexity at about 5M parameters: "
        "LSTM-Char-Small 92.3 against LSTM-Word-Small 97.6; Miyamoto & Cho (2016): the "
        "gated word-character mix below the word-only model, the gain largest on rare words.",
        "- Target: at equal parameters, `chars` and `words+chars` below `words` in test "
        f"perplexity, overall and on rare words: {met} (overall "
        f"{'below' if better else 'not below for all'}, rare words "
        f"{'below' if rare_better else 'not below for all'}) at this scale.",
        "",
        *table,
        "",
        f"Scale: the first {args.limit:,} tokens of each PTB split (vocabulary: the full 10,000 "
        f"words), {args.epochs} epoch(s), one run each (seed 0), {args.layers} layer(s) of "
        f"{args.units} {args.cell.upper()} units, stateless windows of 35, batch 20, Adam 1e-3; "
        "on 2 shared CPU cores, so far from the papers' converged models. *size*: the "
        "embedding size (`words`), the char-CNN's filters in all (`chars`: widths 1-6, "
        "filters in proportion to the width, characters in 15, one highway layer), both "
        "(`words+chars`), each chosen so that the trainable parameters come nearest the "
        "`words` model's. Rare words: test positions whose target word occurs fewer than 10 "
        "times as a training target of the run "
        f"({words['rare_tokens']:,} positions, {100 * words['rare_fraction']:.1f}% of the "
        "test); rare-word perplexity: exp of the mean cross-entropy over them.",
        "",
        "Reproduce: `PYTHONPATH=. python benchmarks/char_words.py --out "
        f"{args.out}{' --quick' if args.quick else ''}`, whose runs are:",
        "",
        *(f"    {row['command']}" for row in rows),
    ]


if __name__ == "__main__":
    main()
