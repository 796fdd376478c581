"""``rnncells train rnng``: the generative RNNG (`keras_rnncells.tree.RNNG`,
Dyer et al. 2016) trained on the logic task's formulas as trees.

Each formula of ``logic(shape="tree")`` (postfix tokens) becomes its tree,
``(AND T (OR F T))``: the gates are the nonterminals, T and F the terminals;
the tree becomes its top-down actions (`keras_rnncells.tree.ActionSpace`).
`GrammarModel` carries the labels with the RNNG, so a saved model reads and
names its own actions. The run reports the held-out joint perplexity
``exp(-Σ log p(x, y) / D)``, D the actions or the words (terminals), on
formulas of the training lengths (5-10 gates) and longer ones (11-20).

Served (SavedModel and ONNX): ``{"actions": int32 (B, T)}`` (the ids of
`GrammarModel.space`, 0 padding) -> ``{"log_probability": (B,)`` the joint
``log p(x, y)`` of each row, ``"log_probabilities": (B, T)`` each action's
``}``. A row that is not one tree's actions fails the request (NaN rows
from an ONNX runtime).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_rnncells.apps.base import check_settings
from keras_rnncells.apps.registry import register_app
from keras_rnncells.data.logic import GATES, VOCABULARY, logic
from keras_rnncells.data.pipeline import shuffled_slices
from keras_rnncells.export.servable import Servable, traced
from keras_rnncells.training import Evaluation, Fit, train_run
from keras_rnncells.tree.oracle import REDUCE_ACTION, ActionSpace, Tree, postfix_tree
from keras_rnncells.tree.rnng import RNNG

EVALUATION_SPLITS = {"validation": "5-10 gates", "test": "11-20 gates"}


@keras.saving.register_keras_serializable(package="keras_rnncells")
class GrammarModel(keras.Model):
    """An `RNNG` with its labels: ``model(actions)`` gives each action's
    ``log p(a_t | a_<t)`` (batch, steps), zero at padding; ``space`` turns
    trees into action ids and back.

    Args:
        nonterminals: the nonterminal labels.
        terminals: the words.
        units, embedding_dim: the RNNG's (see `RNNG`).
    """

    def __init__(
        self,
        nonterminals: Sequence[str],
        terminals: Sequence[str],
        units: int = 32,
        embedding_dim: int = 16,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.space = ActionSpace(tuple(nonterminals), tuple(terminals))
        self.rnng = RNNG(len(self.space.nonterminals), len(self.space.terminals), units,
                         embedding_dim, name="rnng")  # fmt: skip
        space = self.space
        smallest_tree = [[space.nt(nonterminals[0]), space.gen(terminals[0]), REDUCE_ACTION]]
        self(ops.convert_to_tensor(smallest_tree, "int32"))  # creates every weight

    @property
    def input_dtype(self) -> str:
        """Action ids: what Keras' default SavedModel signature reads."""
        return "int32"

    def call(self, actions: Any) -> Any:
        return self.rnng(actions)

    def log_probability(self, trees: Sequence[Tree]) -> np.ndarray:
        """``log p(x, y)`` of each tree."""
        return np.sum(np.asarray(self(padded_actions(self.space, trees))), axis=-1)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "nonterminals": list(self.space.nonterminals),
            "terminals": list(self.space.terminals),
            "units": self.rnng.units,
            "embedding_dim": self.rnng.embedding_dim,
        }


def grammar_servable(model: GrammarModel, name: str = "rnng") -> Servable:
    """Serving: action ids in, each row's joint log-probability and each
    action's out (see the module)."""
    module = tf.Module()
    module.model = model

    def score(actions):
        log_probabilities = model(actions)
        return {
            "log_probability": tf.reduce_sum(log_probabilities, axis=-1),
            "log_probabilities": log_probabilities,
        }

    drawn = model.rnng.example_ids((2, 7), 0, np.random.default_rng(0))
    examples = {"actions": drawn.astype("int32")}
    signature = {"actions": tf.TensorSpec((None, None), tf.int32)}
    return Servable(
        name=name,
        cell="lstm",
        module=module,
        serve=traced(score, signature),
        examples=examples,
        onnx_function=traced(score, signature),
        onnx_examples=examples,
    )


# -- the data --------------------------------------------------------------------------

LOGIC_SPACE = ActionSpace(tuple(GATES), ("F", "T"))


def logic_trees(
    seed: int, train_size: int, validation_size: int, test_size: int, batch_size: int = 32
) -> dict:
    """The trees of ``logic(shape="tree")``'s splits (train and validation
    5-10 gates, test 11-20), by split."""
    task = logic(
        shape="tree",
        seed=seed,
        train_size=train_size,
        validation_size=validation_size,
        test_size=test_size,
        batch_size=batch_size,
    )
    trees = {}
    for split in ("train", *EVALUATION_SPLITS):
        rows = [row for inputs, _ in getattr(task, split) for row in np.asarray(inputs)]
        trees[split] = [postfix_tree([VOCABULARY[i] for i in r if i], tuple(GATES)) for r in rows]
    return trees


def padded_actions(space: ActionSpace, trees: Sequence[Tree]) -> np.ndarray:
    """The trees' action ids, right-padded with 0, (len(trees), longest)."""
    rows = [space.actions(tree) for tree in trees]
    value = np.zeros((len(rows), max(map(len, rows), default=0)), "int32")
    for i, row in enumerate(rows):
        value[i, : len(row)] = row
    return value


def count_words(tree: Tree) -> int:
    """The number of terminals of ``tree``."""
    return 1 if isinstance(tree, str) else sum(map(count_words, tree[1:]))


def negative_log_likelihood(_: Any, log_probabilities: Any) -> Any:
    """Each row's ``-log p(x, y)`` from its actions' log-probabilities (the
    targets are not read: the actions are the model's input)."""
    return -ops.sum(log_probabilities, axis=-1)


# -- the run ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GrammarSettings:
    """The settings of an RNNG run (all written into ``results.json``)."""

    units: int = 32
    embedding_dim: int = 16
    epochs: int = 10
    batch_size: int = 32
    seed: int = 0
    train_size: int = 4000
    validation_size: int = 1000
    test_size: int = 1000
    learning_rate: float = 3e-3

    def __post_init__(self) -> None:
        check_settings(self)


def perplexities(log_probability: float, trees: Sequence[Tree]) -> dict[str, float]:
    """``exp(-log_probability / D)`` per action and per word of ``trees``."""
    actions = sum(len(LOGIC_SPACE.actions(tree)) for tree in trees)
    words = sum(map(count_words, trees))
    return {
        "per_action": math.exp(-log_probability / actions),
        "per_word": math.exp(-log_probability / words),
    }


def build_grammar(settings: GrammarSettings, trees: dict) -> Fit:
    """The compiled RNNG of a run and its training batches."""
    model = GrammarModel(LOGIC_SPACE.nonterminals, LOGIC_SPACE.terminals, settings.units,
                         settings.embedding_dim)  # fmt: skip
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=5.0),
        negative_log_likelihood,
        jit_compile=False,
    )

    def batches(split: str, seed: int | None) -> tf.data.Dataset:
        actions = padded_actions(LOGIC_SPACE, trees[split])
        targets = np.zeros((len(actions), 1), "float32")
        return shuffled_slices((actions, targets), seed).batch(settings.batch_size)

    return Fit(model, batches("train", settings.seed), batches("validation", None))


def evaluate_grammar(model: GrammarModel, trees: dict) -> Evaluation:
    """Held-out perplexities per action and per word (see the module)."""
    results: dict[str, Any] = {
        "task": "logic formulas as trees: p(formula, tree) by the RNNG's actions",
        "parameters": int(model.count_params()),
        "train_examples": len(trees["train"]),
    }
    for split, lengths in EVALUATION_SPLITS.items():
        log_probability = float(np.sum(model.log_probability(trees[split]), dtype="float64"))
        for unit, value in perplexities(log_probability, trees[split]).items():
            results[f"{split}_perplexity_{unit}"] = value
        results[f"{split}_formulas"] = f"{len(trees[split])} of {lengths}"
    return Evaluation(results)


def train_grammar(
    run_dir: str | Path,
    settings: GrammarSettings = GrammarSettings(),
    overwrite: bool = False,
    verbose: int | str = "auto",
) -> dict[str, Any]:
    """Trains, evaluates and saves into ``run_dir`` (resumable, as
    `keras_rnncells.training.train_run` runs); returns the results."""
    return train_run(
        run_dir,
        settings,
        data=lambda: logic_trees(
            settings.seed,
            settings.train_size,
            settings.validation_size,
            settings.test_size,
            settings.batch_size,
        ),
        build=lambda trees, run_dir: build_grammar(settings, trees),
        evaluate=lambda model, trees, run_dir: evaluate_grammar(model, trees),
        overwrite=overwrite,
        verbose=verbose,
    )


def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train rnng``: the run of the settings its flags ``given``."""
    results = train_grammar(args.out, GrammarSettings(**given), overwrite=args.overwrite)
    for split, lengths in EVALUATION_SPLITS.items():
        print(
            f"{split} ({lengths}): perplexity per action "
            f"{results[f'{split}_perplexity_per_action']:.3f}, per word "
            f"{results[f'{split}_perplexity_per_word']:.3f}"
        )
    print(f"Model, results.json and logs in {args.out}")


register_app("rnng", GrammarModel, grammar_servable, train_from_arguments)
