"""The checks of arguments and inputs shared by the package.

Each raises a ``ValueError`` that names the argument (``Argument `units` ...``)
or the input (``Input `sequences` of layer 'gru' ...``), says what was expected
and what was received, and otherwise returns the value (normalized: a NumPy
integer as ``int``, a rate as ``float``).

The argument checks take the argument's name first, then its value, then what
the check needs (``check_float(name, value, interval)``). Checks of one
module's own arguments (SCRN's ``alpha``, MuFuRU's ``operations``) stay in that
module.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras

__all__ = [
    "check_bool",
    "check_choice",
    "check_float",
    "check_input",
    "check_integer",
    "check_keras_object",
    "check_mapping",
    "check_optional_positive_int",
    "check_positive_int",
    "check_range",
    "check_rate",
    "check_seed",
    "check_shape",
    "set_keras_objects",
    "shapes_compatible",
]


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"Argument `{name}` must be a positive integer, received: {value!r}")
    return int(value)


def check_optional_positive_int(name: str, value: Any) -> int | None:
    """A positive integer, or ``None``."""
    return None if value is None else check_positive_int(name, value)


def check_integer(name: str, value: Any, minimum: int) -> int:
    """A Python integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"Argument `{name}` must be an integer >= {minimum}, received: {value!r}")
    return value


def check_seed(name: str, value: Any) -> int:
    """A random seed: any integer (a NumPy one included), as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"Argument `{name}` must be an integer, received: {value!r}")
    return int(value)


def check_range(name: str, value: Any, minimum: int = 1) -> tuple[int, int]:
    """A pair ``(low, high)`` of integers with ``minimum <= low <= high``."""
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and minimum <= value[0] <= value[1]
    ):
        return int(value[0]), int(value[1])
    raise ValueError(
        f"Argument `{name}` must be a pair (low, high) of integers with {minimum} <= low <= high, "
        f"received: {value!r}"
    )


def check_bool(name: str, value: Any) -> bool:
    """``True`` or ``False`` (nothing else: no truthy stand-ins)."""
    if not isinstance(value, bool):
        raise ValueError(f"Argument `{name}` must be True or False, received: {value!r}")
    return value


def check_float(name: str, value: Any, interval: str = "(-inf, inf)") -> float:
    """``value`` as a float in ``interval``, written as in mathematics:
    ``"[0, 1)"``, ``"(0, inf)"``, ``"[1, inf)"``."""
    low_bracket, high_bracket = interval[0], interval[-1]
    low, high = (float(bound) for bound in interval[1:-1].split(","))
    number = (
        float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None
    )
    ok = number is not None and not math.isnan(number)
    if ok:
        above = number >= low if low_bracket == "[" else number > low
        below = number <= high if high_bracket == "]" else number < high
        ok = above and below
    if not ok:
        raise ValueError(f"Argument `{name}` must be a float in {interval}, received: {value!r}")
    return number


def check_rate(name: str, value: Any) -> float:
    """A dropout-like probability, in [0, 1)."""
    return check_float(name, value, "[0, 1)")


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    if value not in choices:
        raise ValueError(f"Argument `{name}` must be one of {tuple(choices)}, received: {value!r}")
    return value


def check_mapping(name: str, value: Any) -> dict:
    """A mapping of keyword arguments (``None``: none), as a new dict."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValueError(
            f"Argument `{name}` must be a dict of keyword arguments, received: {value!r}"
        )
    return dict(value)


def check_keras_object(name: str, value: Any, get: Callable[[Any], Any]) -> Any:
    """``get(value)`` for a Keras getter (``keras.activations.get``,
    ``keras.initializers.get``, ...), whose errors name the argument."""
    try:
        return get(value)
    except (ValueError, TypeError):
        kind = get.__module__.rsplit(".", 1)[-1].rstrip("s")
        raise ValueError(
            f"Argument `{name}` must be a Keras {kind} (a name, a config or a callable), "
            f"received: {value!r}"
        ) from None


def set_keras_objects(owner: Any, **arguments: tuple[Any, Callable[[Any], Any]]) -> None:
    """``owner.<name> = get(value)`` for each ``name=(value, get)``, through
    ``check_keras_object``."""
    for name, (value, get) in arguments.items():
        setattr(owner, name, check_keras_object(name, value, get))


# -- inputs of layers -----------------------------------------------------------------


def shapes_compatible(received: Sequence[int | None], expected: Sequence[int | None]) -> bool:
    """Same rank, and equal sizes where both are known."""
    return len(received) == len(expected) and all(
        r is None or e is None or r == e for r, e in zip(received, expected)
    )


def shape_of(value: Any) -> tuple:
    return tuple(value.shape) if hasattr(value, "shape") else tuple(value)


def described(layout: Sequence[str]) -> str:
    return f"{len(layout)} ({', '.join(layout)})"


DTYPE_KINDS = {  # kind: (what the message says, the test)
    "float": ("a float tensor", keras.backend.is_float_dtype),
    "integer": ("an integer tensor", keras.backend.is_int_dtype),
    # Sequences: Keras' recurrent layers cast integers and bools to floats.
    "numeric": (
        "a float, integer or bool tensor",
        lambda dtype: (
            dtype == "bool"
            or keras.backend.is_int_dtype(dtype)
            or keras.backend.is_float_dtype(dtype)
        ),
    ),
    # Token ids: Keras traces default signatures with float32 inputs, and
    # `Embedding` casts them.
    "ids": (
        "an integer (or float) tensor of ids",
        lambda dtype: keras.backend.is_int_dtype(dtype) or keras.backend.is_float_dtype(dtype),
    ),
}


def check_input(
    layer: Any,
    name: str,
    value: Any,
    *layouts: Sequence[str],
    dtype: str | None = None,
    features: int | None = None,
) -> tuple:
    """The shape of input ``name`` (a tensor, or a shape without ``dtype``) of
    ``layer``, once its rank is that of one of ``layouts`` (axis names, e.g.
    ``("batch", "timesteps", "features")``), its dtype of kind ``dtype``
    (a key of ``DTYPE_KINDS``) and its last axis ``features`` long."""
    shape = shape_of(value)
    where = f"Input `{name}` of layer {layer.name!r}"
    if len(shape) not in [len(layout) for layout in layouts]:
        ranks = " or ".join(described(layout) for layout in layouts)
        raise ValueError(f"{where} must be of rank {ranks}, received shape {shape}")
    if dtype is not None:
        received = keras.backend.standardize_dtype(value.dtype)
        expected, test = DTYPE_KINDS[dtype]
        if not test(received):
            raise ValueError(f"{where} must be {expected}, received dtype {received}")
    if features is not None and shape[-1] is not None and shape[-1] != features:
        raise ValueError(
            f"{where} must have {features} features (last axis), the size the layer was "
            f"built for, received shape {shape}"
        )
    return shape


def check_shape(
    layer: Any, name: str, value: Any, expected: Sequence[int | None], layout: Sequence[str]
) -> tuple:
    """The shape of input ``name`` of ``layer`` once compatible with
    ``expected`` (``None``: any size), whose axes ``layout`` names."""
    shape = shape_of(value)
    if not shapes_compatible(shape, expected):
        raise ValueError(
            f"Input `{name}` of layer {layer.name!r} must be of shape {tuple(expected)} "
            f"({', '.join(layout)}), received shape {shape}"
        )
    return shape
