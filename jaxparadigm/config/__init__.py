"""Typed, frozen experiment configs loaded from YAML (the project's one config loader).

A config file is UTF-8 YAML (a key given twice in one mapping is refused, naming both lines)
converted, field by field, into the frozen dataclasses of :mod:`jaxparadigm.config.sections` by
:mod:`jaxparadigm.config.schema`: strict types, ``Annotated`` bounds (``Bounds``, ``Length``), and
*every* problem reported at once, in the style of pydantic's error list: one
:class:`~jaxparadigm.errors.ConfigError` with one line per problem (unknown keys first, each with a
did-you-mean suggestion), each naming the dotted key path (e.g. ``optim.schedule.warmup_steps``),
the value found and what was expected; a single problem is one line. After the fields, the relations
between them (:data:`RELATIONS`) are checked (``data.batch_size`` against ``data.n_samples``,
``name`` is a plain directory name, ``out_dir`` is a directory ...). A file that is a directory,
unreadable or not UTF-8 is named in the error.

Overrides ``key.path=value`` (from the CLI) are applied to the raw mapping before conversion, the
value itself parsed as YAML so ``optim.learning_rate=3e-4`` and ``model.hidden=[8,8]`` work.
Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from jaxparadigm.config.relations import *  # noqa: F403 (the names jaxparadigm.config offers)
from jaxparadigm.config.relations import NAME_MAX_BYTES, RELATIONS  # noqa: F401
from jaxparadigm.config.schema import (  # noqa: F401
    INVALID,
    SHOWN_CHARS,
    Bounds,
    Length,
    Problem,
    build,
    problems_error,
    shown,
)
from jaxparadigm.config.sections import *  # noqa: F403
from jaxparadigm.config.sections import Config
from jaxparadigm.config.yaml_loader import (  # noqa: F401
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    DuplicateKeyError,
    YamlLimitError,
    parse_yaml,
)
from jaxparadigm.errors import ConfigError

# ---------------------------------------------------------------------------------------------
# YAML, overrides, files.
# ---------------------------------------------------------------------------------------------


YAML_ERROR_CHARS = (
    300  # a YAML error quoted in a ConfigError is cut here (an anchor name can be 1 MB)
)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= YAML_ERROR_CHARS else text[: YAML_ERROR_CHARS - 3] + "..."


def apply_override(raw: dict, override: str) -> dict:
    """Return a copy of ``raw`` with ``key.path=value`` set (value parsed as YAML)."""
    if "=" not in override:
        raise ConfigError(f"override {shown(override)}: expected the form key.path=value")
    key, _, text = override.partition("=")
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"override {shown(override)}: empty component in key path {shown(key)}")
    try:
        value = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"override {shown(override)}: value is not valid YAML ({_one_line(exc)})"
        ) from None
    out = dict(raw)
    node = out
    for i, part in enumerate(parts[:-1]):
        child = node.get(part, {})
        if not isinstance(child, Mapping):
            raise ConfigError(
                f"config key '{'.'.join(parts[: i + 1])}': cannot set a sub-key of a "
                f"non-mapping value {shown(child)}"
            )
        node[part] = dict(child)
        node = node[part]
    node[parts[-1]] = value
    return out


def config_from_dict(
    raw: Mapping[str, Any], overrides: Sequence[str] = (), *, source: str | None = None
) -> Config:
    """Build a :class:`Config` from a mapping, after applying ``key.path=value`` overrides.

    Raises one :class:`ConfigError` listing every problem (``source`` names the file in it).
    """
    data = dict(raw)
    for override in overrides:
        data = apply_override(data, override)
    problems: list[Problem] = []
    cfg = build(Config, data, "", problems)
    if cfg is not INVALID:
        for check in RELATIONS:
            problems.extend(check(cfg))
    if problems:
        raise problems_error(problems, source, _problems_origin(problems, overrides, source))
    return cfg


def _problems_origin(problems, overrides: Sequence[str], source: str | None) -> str | None:
    """Where ``problems`` come from: "the overrides (...)" when every problem's key path was set by
    an override (or lies under one), "config file X and its overrides" when some were, else None
    (the file)."""
    keys = [o.partition("=")[0].strip() for o in overrides]
    by_override = [
        any(p.path == k or p.path.startswith(k + ".") or k.startswith(p.path + ".") for k in keys)
        for p in problems
    ]
    if keys and all(by_override):
        return f"the overrides ({' '.join(overrides)})"
    if any(by_override):
        return f"config file {source!r} and its overrides" if source else "the config and overrides"
    return None


def _read_text(path: str | os.PathLike) -> str:
    name = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {name!r}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {name!r}: is a directory, expected a YAML file") from None
    except PermissionError:
        raise ConfigError(f"config file {name!r}: not readable (permission denied)") from None
    except OSError as exc:
        raise ConfigError(f"config file {name!r}: cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {name!r}: not a UTF-8 text file (byte 0x{data[exc.start]:02x} at "
            f"offset {exc.start}); expected YAML"
        ) from None


def _key_paths(raw: Mapping, prefix: str = "") -> Iterator[str]:
    """Every dotted key path of the nested mapping ``raw`` (parents included)."""
    for key, value in raw.items():
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, Mapping):
            yield from _key_paths(value, path + ".")


class LoadedConfig(NamedTuple):
    """A config file read ONCE: the checked :class:`Config` and what the user set (C5.1).

    ``raw`` is the file's mapping before the ``overrides``; ``user_keys`` are the dotted key
    paths the file or an override set (parents included), so a caller asks :meth:`sets` instead of
    reading the YAML again, and :meth:`with_overrides` re-checks the same mapping with more
    overrides without touching the file."""

    config: Config
    raw: Mapping[str, Any]
    overrides: tuple[str, ...]
    source: str
    user_keys: frozenset[str]

    def sets(self, key: str) -> bool:
        """Whether the file or an override set ``key`` (a dotted path: ``train.sharding.mode``)."""
        return key in self.user_keys

    def with_overrides(self, *extra: str) -> Config:
        """The config of the same file with ``extra`` overrides after the user's (no file read)."""
        return config_from_dict(self.raw, [*self.overrides, *extra], source=self.source)


def read_config(path: str | os.PathLike, overrides: Sequence[str] = ()) -> LoadedConfig:
    """Read a YAML config file (strict safe loader) once: the checked config and the keys set.

    Every failure is a :class:`ConfigError` naming the file or the key path.
    """
    name = os.fspath(path)
    try:
        raw = parse_yaml(_read_text(path))
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {name!r}: invalid YAML ({_one_line(exc)})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"config file {name!r}: top level is {type(raw).__name__}, expected a mapping"
        )
    cfg = config_from_dict(raw, overrides, source=name)
    data = dict(raw)
    for override in overrides:
        data = apply_override(data, override)
    keys = frozenset(_key_paths(data))
    return LoadedConfig(cfg, raw, tuple(overrides), name, keys)


def load_config(path: str | os.PathLike, overrides: Sequence[str] = ()) -> Config:
    """Load a YAML config file (strict safe loader) into a frozen :class:`Config`
    (:func:`read_config`'s ``config``).

    Every failure is a :class:`ConfigError` naming the file or the key path.
    """
    return read_config(path, overrides).config


def to_dict(cfg: Any) -> dict:
    """The config as plain Python data (tuples become lists), e.g. for reports and signatures."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(dataclasses.asdict(cfg))
