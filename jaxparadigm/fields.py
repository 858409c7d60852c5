"""Bounded settings fields: ``Annotated`` marks and the one check of a settings dataclass (C5.1).

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

from jaxparadigm.common.numbers import plain_number, range_text
from jaxparadigm.common.quoting import quote

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
    "bounds_problem",
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
        """``in [0, 1)``, ``>= 1``, ``> 0`` ... (:func:`jaxparadigm.common.numbers.range_text`)."""
        return range_text(
            self.gt if self.ge is None else self.ge,
            self.lt if self.le is None else self.le,
            lo_open=self.ge is None and self.gt is not None,
            hi_open=self.le is None and self.lt is not None,
        )


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


def bounds_problem(value: Any, base: Any, mark: Bounds) -> str | None:
    """What ``value`` (already of type ``base``) breaks of the ``Bounds``/``Length`` ``mark``, or
    None: ``"got 0, expected an int >= 1"``, ``"got 0 item(s), expected a number of items >= 1"``.
    The one application of a bound, by :func:`check_fields` and the config loader alike."""
    if isinstance(mark, Length):
        if mark.admits(len(value)):
            return None
        return f"got {len(value)} item(s), expected a number of items {mark.describe()}"
    if mark.admits(value):
        return None
    return (
        f"got {quote(value)}, expected {'an int' if base is int else 'a float'} {mark.describe()}"
    )


def _marks_problem(value: Any, tp: Any, key: str) -> str | None:
    """``"KEY: what is wrong"`` for what ``value`` (of the right type) breaks among the marks of
    ``tp`` (an item of a list named ``KEY[i]``), or None."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        arm = next((a for a in typing.get_args(tp) if _type_ok(value, a)), None)
        return None if arm is None else _marks_problem(value, arm, key)  # the arm the value takes
    if origin is tuple:
        elem = typing.get_args(tp)[0]
        found = (_marks_problem(v, elem, f"{key}[{i}]") for i, v in enumerate(value))
        return next((p for p in found if p is not None), None)
    if origin is not Annotated:
        return None
    base, *marks = typing.get_args(tp)
    for mark in marks:
        if isinstance(mark, Bounds) and (problem := bounds_problem(value, base, mark)):
            return f"{key}: {problem}"
        if isinstance(mark, OneOf) and value not in mark.choices:
            return f"{key}: got {quote(value)}, expected {mark.describe()}"
    return _marks_problem(value, base, key)


_HINTS: dict[type, dict[str, Any]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints`` of a settings class, once per class (evaluating the string
    annotations took ~0.3 ms a call: one search's options were checked twice per query)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return hints


def check_fields(settings: Any) -> None:
    """Check each field of the dataclass ``settings`` against its type hint; raise at the first bad.

    ``TypeError``/``ValueError``: ``"<PATH>.<field>: got <value>, expected ..."`` (``PATH`` is the
    class's key path, e.g. ``optim``; an item of a list ``<field>[i]``); a wrong type (a string for
    a number, ``True`` for an int, NaN) is a ``TypeError``, a value outside the bounds
    (:func:`bounds_problem`), the ``Literal`` or the table a ``ValueError``. A NumPy integer or
    float scalar is taken as the Python number it equals, and stored so
    (:func:`~jaxparadigm.common.numbers.plain_number`)."""
    cls = type(settings)
    prefix = getattr(cls, "PATH", cls.__name__)
    hints = _type_hints(cls)
    for f in dataclasses.fields(settings):
        value, tp = plain_number(getattr(settings, f.name)), hints[f.name]
        if value is not getattr(settings, f.name):
            object.__setattr__(settings, f.name, value)  # a frozen dataclass: set once, here
        key = f"{prefix}.{f.name}"
        if not _type_ok(value, tp):
            err = ValueError if isinstance(value, str) and _admits_names(tp) else TypeError
            raise err(f"{key}: got {quote(value)}, expected {describe_type(tp)}")
        problem = _marks_problem(value, tp, key)
        if problem is not None:
            raise ValueError(problem)


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
