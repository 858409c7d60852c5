"""Bounded settings fields: the ``Annotated`` marks and the one check of a settings dataclass (C5.1).

A library's settings type (``optim.OptimSettings``, ``train.GuardSettings`` ...) is a frozen
dataclass whose type hints are its rules: ``Annotated[int, Bounds(ge=1)]`` (a number in a range),
``Annotated[tuple[...], Length(ge=1)]`` (a list's length), ``Annotated[str, OneOf(names)]`` (a
name from a table), ``Literal[...]``, ``X | None``, ``tuple[X, ...]``, a nested settings type.
Its ``__post_init__`` calls :func:`check_fields`, which raises ONE error at the first bad field:
``TypeError`` for a wrong type, ``ValueError`` for a value out of range, each naming the key path
(the class's ``PATH`` plus the field, e.g. ``optim.learning_rate``), the value and what was
expected. The config loader (:mod:`jaxparadigm.config.schema`) reads the same hints to report
every problem of a YAML file at once; the defaults and bounds are written once, in the library.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from jaxparadigm.errors import short_repr

__all__ = [
    "INT32_MAX",
    "Bounds",
    "Count",
    "Length",
    "NonNegative",
    "OneOf",
    "Positive",
    "Rate",
    "Seed",
    "StepIndex",
    "StorageDtype",
    "check_fields",
    "describe_type",
]


@dataclass(frozen=True)
class Bounds:
    """``Annotated`` metadata: the allowed range of a number field (``ge``/``gt``/``le``/``lt``)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def admits(self, x: float) -> bool:
        """Whether ``x`` lies within every given bound."""
        return (
            (self.ge is None or x >= self.ge)
            and (self.gt is None or x > self.gt)
            and (self.le is None or x <= self.le)
            and (self.lt is None or x < self.lt)
        )

    def describe(self) -> str:
        """``in [0, 1)``, ``>= 1``, ``> 0`` ..."""
        num = lambda x: str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"
        low = (f"[{num(self.ge)}" if self.ge is not None else None) or (
            f"({num(self.gt)}" if self.gt is not None else None
        )
        high = (f"{num(self.le)}]" if self.le is not None else None) or (
            f"{num(self.lt)})" if self.lt is not None else None
        )
        if low and high:
            return f"in {low}, {high}"
        if low:
            return (">= " if low[0] == "[" else "> ") + low[1:]
        assert high is not None  # every Bounds/Length in use sets at least one bound
        return ("<= " if high[-1] == "]" else "< ") + high[:-1]


@dataclass(frozen=True)
class Length(Bounds):
    """``Annotated`` metadata: the allowed number of items of a list field."""


@dataclass(frozen=True)
class OneOf:
    """``Annotated[str, OneOf(names)]``: a name from a table (e.g. the optimiser registry), so the
    allowed values are derived from the table instead of a hand-synced ``Literal``."""

    choices: tuple[str, ...]

    def describe(self) -> str:
        """``one of 'a', 'b'``."""
        return "one of " + ", ".join(repr(c) for c in self.choices)


def describe_type(tp: Any) -> str:
    """What a value of hint ``tp`` must be, in words (``finite float``, ``one of 'a', 'b'`` ...)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *marks = typing.get_args(tp)
        one_of = [m for m in marks if isinstance(m, OneOf)]
        return one_of[0].describe() if one_of else describe_type(base)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = " or ".join(describe_type(a) for a in args)
        return f"{inner} or null" if len(args) < len(typing.get_args(tp)) else inner
    if origin is tuple:
        return f"list of {describe_type(typing.get_args(tp)[0])}"
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return f"mapping ({tp.__name__})"
    if tp is float:
        return "finite float"
    return getattr(tp, "__name__", str(tp))


def _type_ok(value: Any, tp: Any) -> bool:
    """Whether ``value`` has the type of hint ``tp`` (marks aside)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _type_ok(value, typing.get_args(tp)[0])
    if origin is Literal:
        return not isinstance(value, bool) and value in typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(tp))
    if origin is tuple:
        elem = typing.get_args(tp)[0]
        return isinstance(value, tuple) and all(_type_ok(v, elem) for v in value)
    if tp is type(None):
        return value is None
    if tp is Any:
        return True
    if tp is float:
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(float(value))
        )
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def _admits_names(tp: Any) -> bool:
    """Whether hint ``tp`` takes a name from a list (a ``Literal`` or ``OneOf``), at any depth of
    ``Annotated``/``X | None``: a string outside the list is then a bad value, not a bad type."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return True
    if origin is Annotated:
        marks = typing.get_args(tp)[1:]
        return any(isinstance(m, OneOf) for m in marks) or _admits_names(typing.get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return any(_admits_names(a) for a in typing.get_args(tp))
    return False


def _marks_problem(value: Any, tp: Any) -> str | None:
    """What ``value`` (of the right type) breaks among the marks of ``tp``, or None."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        arm = next((a for a in typing.get_args(tp) if _type_ok(value, a)), None)
        return None if arm is None else _marks_problem(value, arm)  # the arm the value takes
    if origin is tuple:
        elem = typing.get_args(tp)[0]
        return next((p for v in value if (p := _marks_problem(v, elem)) is not None), None)
    if origin is not Annotated:
        return None
    base, *marks = typing.get_args(tp)
    for mark in marks:
        if isinstance(mark, Length) and not mark.admits(len(value)):
            return f"expected a number of items {mark.describe()}"
        if type(mark) is Bounds and not mark.admits(value):
            return f"expected {'an int' if base is int else 'a float'} {mark.describe()}"
        if isinstance(mark, OneOf) and value not in mark.choices:
            return f"expected {mark.describe()}"
    return _marks_problem(value, base)


def check_fields(settings: Any) -> None:
    """Check every field of the dataclass ``settings`` against its type hint; raise at the first bad.

    ``TypeError``/``ValueError``: ``"<PATH>.<field>=<value>: expected ..."`` (``PATH`` is the
    class's key path, e.g. ``optim``); a wrong type (a string for a number, ``True`` for an int,
    NaN) is a ``TypeError``, a value outside the bounds, the ``Literal`` or the table a
    ``ValueError``."""
    cls = type(settings)
    prefix = getattr(cls, "PATH", cls.__name__)
    hints = typing.get_type_hints(cls, include_extras=True)
    for f in dataclasses.fields(settings):
        value, tp = getattr(settings, f.name), hints[f.name]
        key = f"{prefix}.{f.name}={short_repr(value)}"
        if not _type_ok(value, tp):
            err = ValueError if isinstance(value, str) and _admits_names(tp) else TypeError
            raise err(f"{key}: expected {describe_type(tp)}")
        problem = _marks_problem(value, tp)
        if problem is not None:
            raise ValueError(f"{key}: {problem}")


#: The largest int32: the step counters are int32.
INT32_MAX = 2**31 - 1
#: Optimiser-state storage dtypes of a config.
StorageDtype = Literal["float32", "bfloat16", "float16"]
#: A positive step count / interval.
Count = Annotated[int, Bounds(ge=1, le=INT32_MAX)]
#: A 0-based data step.
StepIndex = Annotated[int, Bounds(ge=0, le=INT32_MAX - 1)]
#: A PRNG seed (``PRNGKey(2**32)`` would equal ``PRNGKey(0)``).
Seed = Annotated[int, Bounds(ge=0, le=2**32 - 1)]
#: A decay rate or dropout probability, in ``[0, 1)``.
Rate = Annotated[float, Bounds(ge=0.0, lt=1.0)]
#: A float ``>= 0``.
NonNegative = Annotated[float, Bounds(ge=0.0)]
#: A float ``> 0``.
Positive = Annotated[float, Bounds(gt=0.0)]
