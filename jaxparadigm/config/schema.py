"""Strict conversion of plain data (parsed YAML) into frozen dataclasses, with an error list.

The mechanism behind :mod:`jaxparadigm.config` (its one config loader), in the style of pydantic:

* :func:`build` converts a mapping into a dataclass field by field, following the type hints, and
  records every :class:`Problem` (dotted key path + what is wrong) instead of stopping at the first;
  an unknown key gets a did-you-mean suggestion (difflib) or the list of valid keys;
* ``int`` accepts only integers (not ``True``, not ``1.5``); ``float`` accepts finite integers and
  floats (and strings such as ``"1e-3"`` that parse as one); ``bool`` only ``true``/``false``;
  ``Literal`` only the listed values; ``tuple[X, ...]`` a list; ``X | None`` also null;
* ``Annotated[int, Bounds(ge=1)]`` bounds a number, ``Annotated[tuple[...], Length(ge=1)]`` a
  list's length, ``Annotated[str, OneOf(names)]`` names a table's entry (marks of
  :mod:`jaxparadigm.fields`, shared with the libraries' settings types);
* :func:`problems_error` turns the problems into one :class:`~jaxparadigm.errors.ConfigError`
  (unknown keys first; a single problem is one line);
* the YAML reader with its limits is :mod:`jaxparadigm.config.yaml_loader`;
* a value quoted in a message is shown by :func:`shown`
  (:func:`jaxparadigm.common.quoting.quote` at :data:`SHOWN_CHARS` characters), so an error stays
  one readable line whatever the value.

Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple, Union

from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import ConfigError
from jaxparadigm.fields import Bounds, Length, OneOf, bounds_problem, describe_type

__all__ = [
    "INVALID",
    "Bounds",
    "Length",
    "Problem",
    "SHOWN_CHARS",
    "build",
    "problems_error",
    "shown",
]

#: A value quoted in an error message is cut to this many characters.
SHOWN_CHARS = 80


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, at most :data:`SHOWN_CHARS` characters, in bounded
    work whatever the value's size (:func:`jaxparadigm.common.quoting.quote`)."""
    return quote(value, SHOWN_CHARS)


class Problem(NamedTuple):
    """One config problem: the dotted key path and what is wrong with it."""

    path: str
    message: str
    unknown_key: bool = False

    def __str__(self) -> str:
        path = self.path if len(self.path) <= SHOWN_CHARS else self.path[: SHOWN_CHARS - 3] + "..."
        return f"config key '{path}': {self.message}"


def problems_error(
    problems: list[Problem], source: str | None = None, where: str | None = None
) -> ConfigError:
    """One ConfigError listing ``problems``, unknown keys first (a single problem: one line).

    The head names ``where`` the problems are (e.g. "the overrides"), else the config file
    ``source``, else "the config"."""
    ordered = sorted(problems, key=lambda p: not p.unknown_key)  # stable
    if len(ordered) == 1:
        err = ConfigError(str(ordered[0]))
    else:
        where = where or (f"config file {source!r}" if source else "the config")
        head = f"{len(ordered)} problems in {where}:"
        err = ConfigError("\n".join([head, *(f"  - {p}" for p in ordered)]))
    err.problems = ordered
    return err


#: What a failed conversion returns (its problem is recorded).
INVALID = object()


_type_name = describe_type


def _fail(path: str, value: Any, tp: Any) -> Problem:
    return Problem(path, f"got {shown(value)} ({type(value).__name__}), expected {_type_name(tp)}")


def _scalar(value: Any, tp: Any) -> Any:
    """``value`` converted to the scalar type ``tp``, or INVALID."""
    if tp is bool:
        return value if isinstance(value, bool) else INVALID
    if tp is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else INVALID
    if tp is float:
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return INVALID
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            x = float(value)
            return x if math.isfinite(x) else INVALID
        return INVALID
    if tp is str:
        return value if isinstance(value, str) else INVALID
    raise TypeError(f"unsupported config field type {tp!r}")  # programming error


def _annotated(value: Any, tp: Any, path: str, problems: list[Problem]) -> Any:
    base, *marks = typing.get_args(tp)
    one_of = [m for m in marks if isinstance(m, OneOf)]
    if one_of:  # a name from a table: as a Literal of its keys
        if isinstance(value, str) and value in one_of[0].choices:
            return value
        problems.append(_fail(path, value, tp))
        return INVALID
    out = _convert(value, base, path, problems)
    if out is INVALID:
        return out
    for mark in marks:
        if isinstance(mark, Bounds) and (problem := bounds_problem(out, base, mark)):
            problems.append(Problem(path, problem))
            return INVALID
    return out


def _union(value: Any, tp: Any, path: str, problems: list[Problem]) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if value is None:
        if len(args) < len(typing.get_args(tp)):
            return None
        problems.append(_fail(path, value, tp))
        return INVALID
    if len(args) == 1:  # ``X | None``: X's own message is the precise one
        return _convert(value, args[0], path, problems)
    for arg in args:
        out = _convert(value, arg, path, [])
        if out is not INVALID:
            return out
    problems.append(_fail(path, value, tp))
    return INVALID


def _convert(value: Any, tp: Any, path: str, problems: list[Problem]) -> Any:
    """``value`` as type ``tp``; on failure records the problem(s) and returns ``INVALID``."""
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build(tp, value, path, problems)
    if origin is Annotated:
        return _annotated(value, tp, path, problems)
    if origin in (Union, types.UnionType):
        return _union(value, tp, path, problems)
    if origin is Literal:
        if value in typing.get_args(tp) and not isinstance(value, bool):
            return value
    elif origin is tuple:
        if isinstance(value, (list, tuple)):
            elem = typing.get_args(tp)[0]
            items = [_convert(v, elem, f"{path}[{i}]", problems) for i, v in enumerate(value)]
            return INVALID if any(x is INVALID for x in items) else tuple(items)
    else:
        out = _scalar(value, tp)
        if out is not INVALID:
            return out
    problems.append(_fail(path, value, tp))
    return INVALID


def _unknown_key(key: str, fields: Sequence[str], prefix: str) -> Problem:
    path = f"{prefix}.{key}" if prefix else key
    close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
    if close:
        hint = f"did you mean '{prefix + '.' if prefix else ''}{close[0]}'?"
    else:
        hint = f"expected one of {', '.join(sorted(fields))}"
    return Problem(path, f"unknown key; {hint}", unknown_key=True)


def build(cls: type, raw: Any, prefix: str, problems: list[Problem]) -> Any:
    """``cls(**converted raw)``, or :data:`INVALID` with every problem appended to ``problems``.

    ``prefix`` is the key path of ``raw`` (``""`` at the root). A field without a default is
    required; a key that is not a field is unknown (reported first by :func:`problems_error`).
    """
    if not isinstance(raw, Mapping):
        problems.append(
            Problem(
                prefix or "<root>",
                f"got {shown(raw)} ({type(raw).__name__}), expected a mapping ({cls.__name__})",
            )
        )
        return INVALID
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    problems.extend(_unknown_key(str(k), list(fields), prefix) for k in raw if str(k) not in fields)
    kwargs, ok = {}, True
    for name, f in fields.items():
        path = f"{prefix}.{name}" if prefix else name
        if name in raw:
            kwargs[name] = _convert(raw[name], hints[name], path, problems)
            ok = ok and kwargs[name] is not INVALID
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            problems.append(Problem(path, f"required key is missing ({_type_name(hints[name])})"))
            ok = False
    ok = ok and all(str(k) in fields for k in raw)
    return cls(**kwargs) if ok else INVALID
