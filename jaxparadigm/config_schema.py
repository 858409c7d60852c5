"""Strict conversion of plain data (parsed YAML) into frozen dataclasses, with an error list.

The mechanism behind :mod:`jaxparadigm.config` (its one config loader), in the style of pydantic:

* :func:`build` converts a mapping into a dataclass field by field, following the type hints, and
  records every :class:`Problem` (dotted key path + what is wrong) instead of stopping at the first;
  an unknown key gets a did-you-mean suggestion (difflib) or the list of valid keys;
* ``int`` accepts only integers (not ``True``, not ``1.5``); ``float`` accepts finite integers and
  floats (and strings such as ``"1e-3"`` that parse as one); ``bool`` only ``true``/``false``;
  ``Literal`` only the listed values; ``tuple[X, ...]`` a list; ``X | None`` also null;
* ``Annotated[int, Bounds(ge=1)]`` bounds a number, ``Annotated[tuple[...], Length(ge=1)]`` a
  list's length;
* :func:`problems_error` turns the problems into one :class:`~jaxparadigm.errors.ConfigError`
  (unknown keys first; a single problem is one line);
* :func:`parse_yaml` is ``yaml.SafeLoader`` refusing a key given twice in one mapping (PyYAML would
  keep the last), naming both lines, and refusing a document larger than :data:`MAX_YAML_NODES`
  nodes *once its aliases are expanded* (an "alias bomb": 400 bytes of nested ``&a``/``*a`` make
  10**9 list items), nested deeper than :data:`MAX_YAML_DEPTH`, or with a recursive alias --
  before anything is built from it (:class:`YamlLimitError`);
* a value quoted in a message is shown by :func:`shown`: its ``repr`` cut to
  :data:`SHOWN_CHARS` characters, so an error stays one readable line whatever the value.

Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import reprlib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NamedTuple, Union

import yaml

from jaxparadigm.errors import ConfigError

__all__ = [
    "INVALID",
    "Bounds",
    "DuplicateKeyError",
    "Length",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "Problem",
    "SHOWN_CHARS",
    "YamlLimitError",
    "build",
    "parse_yaml",
    "problems_error",
    "shown",
]

#: The most nodes a config document may have with its aliases expanded (the project's configs
#: have under 200; each node becomes a Python object the schema walks).
MAX_YAML_NODES = 10_000
#: The deepest nesting of sequences/mappings a config document may have (the schema is 4 deep).
MAX_YAML_DEPTH = 32
#: A value quoted in an error message is cut to this many characters.
SHOWN_CHARS = 80

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = SHOWN_CHARS
_REPR.maxlevel = 3


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, at most :data:`SHOWN_CHARS` characters: long
    strings/lists are elided by :mod:`reprlib` (bounded work, whatever the value's size), then cut
    with ``...``."""
    text = _REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


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
        return ("<= " if high[-1] == "]" else "< ") + high[:-1]


@dataclass(frozen=True)
class Length(Bounds):
    """``Annotated`` metadata: the allowed number of items of a list field."""


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


INVALID = object()  # what a failed conversion returns (its problem is recorded)


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _type_name(typing.get_args(tp)[0])
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = " or ".join(_type_name(a) for a in args)
        return f"{inner} or null" if len(args) < len(typing.get_args(tp)) else inner
    if origin is tuple:
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    if dataclasses.is_dataclass(tp):
        return f"mapping ({tp.__name__})"
    if tp is float:
        return "finite float"
    return getattr(tp, "__name__", str(tp))


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
    out = _convert(value, base, path, problems)
    if out is INVALID:
        return out
    for mark in marks:
        if isinstance(mark, Length) and not mark.admits(len(out)):
            problems.append(
                Problem(
                    path, f"got {len(out)} item(s), expected a number of items {mark.describe()}"
                )
            )
            return INVALID
        if type(mark) is Bounds and not mark.admits(out):
            kind = "an int" if base is int else "a float"
            problems.append(Problem(path, f"got {shown(value)}, expected {kind} {mark.describe()}"))
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
    if dataclasses.is_dataclass(tp):
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


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping names the same key twice."""


class YamlLimitError(yaml.YAMLError):
    """A YAML document too large once its aliases are expanded, too deep, or self-referencing."""


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    _depth = 0

    def compose_node(self, parent, index):
        """PyYAML's composer recurses once per level: refuse past MAX_YAML_DEPTH at once."""
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YamlLimitError(
                    f"nesting deeper than {MAX_YAML_DEPTH} levels at line "
                    f"{self.peek_event().start_mark.line + 1}"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: SafeLoader reports it
                break
            if first is not None:
                raise DuplicateKeyError(f"duplicate key {shown(key)} at lines {first} and {line}")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse a node graph whose tree (every alias expanded) exceeds the limits.

    Post-order walk over the *distinct* nodes (an alias is the same node object as its anchor),
    memoising each node's expanded size ``1 + sum(children's sizes)``: linear in the document,
    however large the expansion would be.
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
            if size[key] > MAX_YAML_NODES:
                line = node.start_mark.line + 1
                raise YamlLimitError(
                    f"the value at line {line} expands to more than {MAX_YAML_NODES} nodes "
                    "through its aliases (&anchor/*alias); expected a config of at most "
                    f"{MAX_YAML_NODES} nodes with aliases expanded"
                )
            continue
        if key in size:
            continue
        if depth > MAX_YAML_DEPTH:
            raise YamlLimitError(
                f"nesting deeper than {MAX_YAML_DEPTH} levels at line {node.start_mark.line + 1}"
            )
        on_path.add(key)
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) in on_path:
                raise YamlLimitError(
                    f"recursive alias at line {child.start_mark.line + 1}: an anchor used "
                    "inside its own value; expected a finite config"
                )
            if id(child) not in size:
                stack.append((child, depth + 1, False))


def parse_yaml(text: str) -> Any:
    """YAML text as plain data (safe types only); DuplicateKeyError for a key given twice;
    :class:`YamlLimitError` for a document over :data:`MAX_YAML_NODES` nodes (aliases expanded),
    deeper than :data:`MAX_YAML_DEPTH`, or with a recursive alias -- checked on the composed node
    graph, before any Python object is built."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
