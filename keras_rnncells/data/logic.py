"""Evaluating propositional logic formulas, the task of the MuFuRU paper.

Weissenborn & Rocktäschel (2016), "MuFuRU: The Multi-Function Recurrent Unit",
§4.1: random formulas over the truth values T and F joined by binary gates,
read in postfix (reverse Polish) order, one token per step; the target is the
formula's truth value. Training formulas have 5-10 gates, test formulas 11-20,
so the test measures generalization to longer formulas.

By default a formula is a chain, as the paper's evaluation is sequential: each
gate joins the value so far with the next truth value, ``T F AND T OR`` being
``(T AND F) OR T``; the state then has one truth value to carry, and a cell
able to pick an operation per input (MuFuRU's max, min, diff, ...) can
evaluate formulas of any length. ``shape="tree"`` draws random binary trees
instead, whose postfix evaluation needs a stack (a harder task, outside the
paper).

The gates are the ten binary Boolean functions that depend on both inputs
(the other six of the sixteen are constants or copy or negate one input),
given by their truth tables in `GATES`. They come in complementary pairs, so
a formula is true with probability 1/2 and the labels are balanced.
"""

from __future__ import annotations

import numpy as np

from keras_rnncells.checks import check_positive_int, check_range, check_seed
from keras_rnncells.data.pipeline import binary_targets, split_datasets
from keras_rnncells.data.tasks import Task, register_task

# Output for the inputs (a, b) = (F, F), (F, T), (T, F), (T, T).
GATES: dict[str, tuple[int, int, int, int]] = {
    "AND": (0, 0, 0, 1),
    "NAND": (1, 1, 1, 0),
    "OR": (0, 1, 1, 1),
    "NOR": (1, 0, 0, 0),
    "XOR": (0, 1, 1, 0),
    "XNOR": (1, 0, 0, 1),
    "IMPLIES": (1, 1, 0, 1),  # a -> b
    "NIMPLIES": (0, 0, 1, 0),  # a and not b
    "IMPLIED": (1, 0, 1, 1),  # b -> a
    "NIMPLIED": (0, 1, 0, 0),  # b and not a
}
VOCABULARY = ("<pad>", "F", "T", *GATES)
_GATE_NAMES = tuple(GATES)

Formula = tuple[str, ...]


SHAPES = ("chain", "tree")


def random_formula(
    gates: int, rng: np.random.Generator, shape: str = "chain"
) -> tuple[Formula, bool]:
    """A random formula with ``gates`` gates in postfix order, and its value.

    The root gate is uniform over `GATES`; its left operand has the other
    ``gates - 1`` gates (a chain) or a uniform share 0..gates-1 of them (a
    tree), recursively; leaves are T or F with equal chance.
    """
    if gates == 0:
        value = bool(rng.integers(2))
        return ("T" if value else "F",), value
    left_gates = gates - 1 if shape == "chain" else int(rng.integers(gates))
    left, a = random_formula(left_gates, rng, shape)
    right, b = random_formula(gates - 1 - left_gates, rng, shape)
    gate = _GATE_NAMES[rng.integers(len(_GATE_NAMES))]
    return (*left, *right, gate), bool(GATES[gate][2 * a + b])


def distinct_formulas(
    size: int,
    gates: tuple[int, int],
    rng: np.random.Generator,
    exclude: set[Formula],
    shape: str = "chain",
) -> list[tuple[Formula, bool]]:
    """``size`` formulas, none twice nor in ``exclude`` (which grows by them),
    with a gate count uniform in ``gates`` (inclusive)."""
    formulas: list[tuple[Formula, bool]] = []
    for _ in range(20 * size + 1000):
        if len(formulas) == size:
            return formulas
        formula, value = random_formula(int(rng.integers(gates[0], gates[1] + 1)), rng, shape)
        if formula not in exclude:
            exclude.add(formula)
            formulas.append((formula, value))
    raise ValueError(
        f"Could not draw {size} distinct formulas with {gates[0]}-{gates[1]} gates; "
        "ask for fewer or allow more gates"
    )


def encode_formulas(formulas: list[tuple[Formula, bool]]) -> tuple[list[np.ndarray], np.ndarray]:
    ids = {token: i for i, token in enumerate(VOCABULARY)}
    sequences = [np.array([ids[t] for t in formula], dtype="int32") for formula, _ in formulas]
    return sequences, binary_targets([value for _, value in formulas])


@register_task("logic")
def logic(
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: object = None,
    train_size: int = 1000,
    validation_size: int = 1000,
    test_size: int = 1000,
    train_gates: tuple[int, int] = (5, 10),
    test_gates: tuple[int, int] = (11, 20),
    shape: str = "chain",
) -> Task:
    """Formulas of ``shape`` (see the module) with ``train_gates`` gates for
    training and validation, with ``test_gates`` for test; no formula appears
    in two splits. ``root`` is unused (generated data)."""
    if shape not in SHAPES:
        raise ValueError(f"Argument `shape` must be one of {SHAPES}, received: {shape!r}")
    train_gates = check_range("train_gates", train_gates)
    test_gates = check_range("test_gates", test_gates)
    rng = np.random.default_rng(check_seed("seed", seed))
    seen: set[Formula] = set()
    splits = [
        encode_formulas(distinct_formulas(check_positive_int(k, size), gates, rng, seen, shape))
        for k, size, gates in (
            ("train_size", train_size, train_gates),
            ("validation_size", validation_size, train_gates),
            ("test_size", test_size, test_gates),
        )
    ]
    return Task(
        name="logic",
        kind="binary",
        **split_datasets(splits, batch_size, seed),
        num_classes=2,
        vocabulary_size=len(VOCABULARY),
        vocabulary=VOCABULARY,
        reduce_ids=tuple(VOCABULARY.index(gate) for gate in GATES),
        description=(
            f"Truth value of random propositional formulas ({shape}s) in postfix order over "
            f"T/F and {len(GATES)} binary gates; {train_gates[0]}-{train_gates[1]} gates in "
            f"training, {test_gates[0]}-{test_gates[1]} at test. Weissenborn & Rocktäschel (2016), "
            "'MuFuRU: The Multi-Function Recurrent Unit', §4.1."
        ),
    )
