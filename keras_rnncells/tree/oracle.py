"""Trees as top-down action sequences: the oracle of a generative RNNG
(Dyer, Kuncoro, Ballesteros & Smith 2016, "Recurrent Neural Network
Grammars", §3 and §4).

A tree is a terminal (a string) or a node ``(label, child, ...)`` with at
least one child. Its actions, in depth-first, left-to-right order:

* ``NT(X)`` opens a nonterminal ``X`` (it goes on the stack, open);
* ``GEN(w)`` generates the terminal ``w`` (it goes on the stack);
* ``REDUCE`` closes the innermost open nonterminal, whose children are the
  items above it on the stack.

``(AND T (OR F T))`` is ``NT(AND) GEN(T) NT(OR) GEN(F) GEN(T) REDUCE REDUCE``:
one action per nonterminal, per terminal and per closing bracket, so the
actions spell the bracketed tree token by token (``(AND``, ``T``, ``)``).

`ActionSpace` numbers the actions for a layer (`keras_rnncells.tree.RNNG`):
0 is padding, 1 is ``REDUCE``, then ``NT(X)`` for each nonterminal, then
``GEN(w)`` for each terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Tree = str | tuple

PAD_ACTION, REDUCE_ACTION = 0, 1


def check_tree(tree: Tree) -> Tree:
    """``tree`` if it is a terminal string or a ``(label, child, ...)`` node
    with a string label and at least one child, recursively; else a ValueError."""
    if isinstance(tree, str):
        return tree
    if (
        not isinstance(tree, tuple)
        or len(tree) < 2
        or not isinstance(tree[0], str)
        or not all(isinstance(child, (str, tuple)) for child in tree[1:])
    ):
        raise ValueError(
            "Argument `tree` must be a terminal string or a (label, child, ...) tuple with "
            f"at least one child, received: {tree!r}"
        )
    for child in tree[1:]:
        check_tree(child)
    return tree


def bracketed(tree: Tree) -> str:
    """The tree as a bracketed string, ``(AND T (OR F T))``."""
    if isinstance(tree, str):
        return tree
    return "(" + " ".join([tree[0], *map(bracketed, tree[1:])]) + ")"


def postfix_tree(tokens: Sequence[str], operators: Sequence[str]) -> Tree:
    """The tree a postfix formula spells: each token in ``operators`` joins
    the two trees before it (``T F AND`` is ``("AND", "T", "F")``), every
    other token is a terminal."""
    stack: list[Tree] = []
    for token in tokens:
        if token in operators:
            if len(stack) < 2:
                raise ValueError(
                    f"Argument `tokens` must spell a postfix tree: operator {token!r} "
                    f"has fewer than two operands in {list(tokens)}"
                )
            right = stack.pop()
            stack[-1] = (token, stack[-1], right)
        else:
            stack.append(token)
    if len(stack) != 1:
        raise ValueError(
            f"Argument `tokens` must spell one postfix tree, received {len(stack)} "
            f"trees in {list(tokens)}"
        )
    return stack[0]


@dataclass(frozen=True)
class ActionSpace:
    """The action ids of an RNNG over ``nonterminals`` and ``terminals``
    (see the module): 0 padding, 1 ``REDUCE``, ``2 + i`` ``NT`` of
    ``nonterminals[i]``, ``2 + len(nonterminals) + j`` ``GEN`` of
    ``terminals[j]``."""

    nonterminals: tuple[str, ...]
    terminals: tuple[str, ...]

    def __post_init__(self) -> None:
        for name in ("nonterminals", "terminals"):
            values = tuple(getattr(self, name))
            if not values or len(set(values)) != len(values):
                raise ValueError(
                    f"Argument `{name}` must be a non-empty sequence of distinct labels, "
                    f"received: {values!r}"
                )
            object.__setattr__(self, name, values)

    @property
    def size(self) -> int:
        """The number of ids, padding included."""
        return 2 + len(self.nonterminals) + len(self.terminals)

    def nt(self, label: str) -> int:
        """The id of ``NT(label)``."""
        return 2 + self._index("nonterminal", self.nonterminals, label)

    def gen(self, word: str) -> int:
        """The id of ``GEN(word)``."""
        return 2 + len(self.nonterminals) + self._index("terminal", self.terminals, word)

    def name(self, action: int) -> str:
        """``"NT(X)"``, ``"GEN(w)"``, ``"REDUCE"`` or ``"PAD"``."""
        if action == PAD_ACTION:
            return "PAD"
        if action == REDUCE_ACTION:
            return "REDUCE"
        if 2 <= action < 2 + len(self.nonterminals):
            return f"NT({self.nonterminals[action - 2]})"
        if 2 + len(self.nonterminals) <= action < self.size:
            return f"GEN({self.terminals[action - 2 - len(self.nonterminals)]})"
        raise ValueError(f"Argument `action` must be in [0, {self.size}), received: {action}")

    def actions(self, tree: Tree) -> list[int]:
        """The tree's top-down action ids (the oracle)."""
        check_tree(tree)
        if isinstance(tree, str):
            raise ValueError(
                f"Argument `tree` must have a nonterminal at its root, received the terminal "
                f"{tree!r}"
            )
        return self._actions(tree)

    def _actions(self, tree: Tree) -> list[int]:
        if isinstance(tree, str):
            return [self.gen(tree)]
        children = [action for child in tree[1:] for action in self._actions(child)]
        return [self.nt(tree[0]), *children, REDUCE_ACTION]

    def tree(self, actions: Sequence[int]) -> Tree:
        """The tree that ``actions`` build (padding ids skipped); a ValueError
        for a sequence that is not one tree's."""
        stack: list[tuple[bool, Tree]] = []  # (open, item): an open item is its label
        done = False
        for step, action in enumerate(int(a) for a in actions):
            if action == PAD_ACTION:
                continue
            name = self.name(action)
            problem = None
            if done:
                problem = "the tree is complete"
            elif action == REDUCE_ACTION:
                opens = [i for i, (is_open, _) in enumerate(stack) if is_open]
                if not opens or opens[-1] == len(stack) - 1:
                    problem = "there is no open nonterminal with children"
                else:
                    start = opens[-1]
                    node = (stack[start][1], *(item for _, item in stack[start + 1 :]))
                    del stack[start:]
                    stack.append((False, node))
                    done = len(stack) == 1
            elif name.startswith("GEN") and not any(is_open for is_open, _ in stack):
                problem = "there is no open nonterminal"
            elif name.startswith("NT") and stack and not any(is_open for is_open, _ in stack):
                problem = "there is no open nonterminal"
            else:
                label = name[name.index("(") + 1 : -1]
                stack.append((name.startswith("NT"), label))
            if problem:
                raise ValueError(
                    f"Argument `actions` must build one tree: {name} at step {step}, "
                    f"where {problem}"
                )
        if not done:
            raise ValueError("Argument `actions` must build one tree: it ends with the tree open")
        return stack[0][1]

    @staticmethod
    def _index(kind: str, labels: tuple[str, ...], label: str) -> int:
        try:
            return labels.index(label)
        except ValueError:
            raise ValueError(f"Unknown {kind} {label!r}; expected one of {labels}") from None
