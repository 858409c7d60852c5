"""What a checkpoint is signed with and how its metadata is read (C5.1: "sign models").

The signature, over ``m = for each leaf in tree order: keystr(path) | dtype | shape | raw bytes ;
json(config)``, is ``sha256(m)``, or ``HMAC-SHA256(key, m)`` with a secret key
(:data:`KEY_ENV_VAR`); ``config`` is :func:`signed_config`, the plain data of :data:`SIGNED_KEYS`
of a project config. The checkpoints themselves are in :mod:`jaxparadigm.train.checkpoint`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.train.sharding import to_host

__all__ = [
    "KEY_ENV_VAR",
    "SIGNED_KEYS",
    "CheckpointError",
    "CheckpointLayoutError",
    "CheckpointSignatureError",
    "signed_config",
    "state_signature",
]

_FORMAT = 2  # 1: the whole config was signed; 2: signed_config(config)
#: Environment variable holding an HMAC key; when set, checkpoint signatures are keyed.
KEY_ENV_VAR = "JAXPARADIGM_CHECKPOINT_KEY"
#: The config keys that define a train state and are signed (claim C5.1): model,
#: data, optimiser and seed. Run-control keys (resume, steps, cadence, out_dir) are not signed.
SIGNED_KEYS = ("model", "data", "optim", "train.seed")


class CheckpointError(InputError):
    """A checkpoint cannot be used: incomplete, unreadable, malformed, or of another structure."""


class CheckpointSignatureError(CheckpointError):
    """A checkpoint's signature or signed config does not match its contents or the current one."""


class CheckpointLayoutError(CheckpointError):
    """A checkpoint's arrays cannot be read into this run's layout (its mesh is named)."""


def _project(plain: dict) -> dict:
    """``{key: plain[key]}`` for ``SIGNED_KEYS`` (dotted keys nest)."""
    out: dict = {}
    for key in SIGNED_KEYS:
        head, _, tail = key.partition(".")
        if tail:
            out.setdefault(head, {})[tail] = plain[head][tail]
        else:
            out[head] = plain[head]
    return out


def _is_project_config(config: Any) -> bool:
    """Whether ``config`` is a project config (a dataclass with every ``SIGNED_KEYS`` section)."""
    return (
        dataclasses.is_dataclass(config)
        and not isinstance(config, type)
        and all(hasattr(config, key.partition(".")[0]) for key in SIGNED_KEYS)
    )


def signed_config(config: Any) -> Any:
    """What a checkpoint is signed with: for a project config (``jaxparadigm.config.Config``),
    the plain data of ``SIGNED_KEYS``; any other value (a dict, None) as given (C5.1)."""
    return _project(_plain(config)) if _is_project_config(config) else config


def _config_json(config: Any) -> str:
    """Canonical JSON of ``signed_config(config)`` (a stored copy re-dumps to the same text)."""
    config = signed_config(config)
    plain = _plain(config) if dataclasses.is_dataclass(config) else config
    return json.dumps(json.loads(json.dumps(plain, default=str)), sort_keys=True)


def _differences(stored: Any, current: Any, prefix: str = "") -> list[str]:
    """``key.path: checkpoint X, now Y`` for every leaf where two plain configs differ."""
    if isinstance(stored, dict) and isinstance(current, dict):
        out = []
        for k in sorted(set(stored) | set(current), key=str):
            path = f"{prefix}.{k}" if prefix else str(k)
            if k not in stored or k not in current:
                have = "absent" if k not in stored else repr(stored[k])
                now = "absent" if k not in current else repr(current[k])
                out.append(f"{path}: checkpoint {have}, now {now}")
            else:
                out.extend(_differences(stored[k], current[k], path))
        return out
    return (
        []
        if stored == current
        else [f"{prefix or 'config'}: checkpoint {stored!r}, now {current!r}"]
    )


def _flat(state) -> tuple[list[str], list[np.ndarray], Any]:
    """Leaf paths, global leaf values on the host (gathered across processes), tree structure."""
    pairs, treedef = jax.tree_util.tree_flatten_with_path(state)
    paths = [jax.tree_util.keystr(p) for p, _ in pairs]
    leaves = [to_host(x) for _, x in pairs]
    return paths, leaves, treedef


def _key_bytes(key: Any) -> bytes | None:
    """``key`` as bytes (str is UTF-8 encoded); None stays None. Empty or other types are errors."""
    if key is None:
        return None
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key: got {type(key).__name__}, expected bytes, str or None")
    if not key:
        raise ValueError("key: got an empty key, expected at least one byte (or None for sha256)")
    return bytes(key)


def _kind(key: bytes | None) -> str:
    return "sha256" if key is None else "hmac-sha256"


def _signature(
    paths: list[str], leaves: list[np.ndarray], config_json: str, key: bytes | None
) -> str:
    h = hashlib.sha256() if key is None else hmac.new(key, digestmod=hashlib.sha256)
    for path, leaf in zip(paths, leaves, strict=True):
        h.update(f"{path}|{leaf.dtype.str}|{leaf.shape}|".encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
    h.update(config_json.encode())
    return h.hexdigest()


def state_signature(state: Any, config: Any = None, key: bytes | str | None = None) -> str:
    """Hex sha256 over every leaf (path, dtype, shape, bytes) of ``state`` and
    :func:`signed_config` of ``config`` (C5.1). With ``key`` (bytes, or str as UTF-8) it is
    ``HMAC-SHA256(key, ...)`` over the same message.
    """
    paths, leaves, _ = _flat(state)
    return _signature(paths, leaves, _config_json(config), _key_bytes(key))


def _read_meta(path: Path, step: int) -> dict:
    """A step's ``meta`` item, checked to be a format-1/2 JSON object; CheckpointError if not."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise CheckpointError(
            f"checkpoint step {step}: metadata file {str(path)!r} is unreadable (too deeply nested)"
        ) from None
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, bad UTF-8, a 4,300-digit number
        raise CheckpointError(
            f"checkpoint step {step}: metadata file {str(path)!r} is unreadable "
            f"({' '.join(str(exc).split())})"
        ) from None
    expected = {"paths": list, "signature": str}
    bad = [
        k
        for k, t in expected.items()
        if not isinstance(meta, dict) or not isinstance(meta.get(k), t)
    ]
    if bad or meta.get("format", 1) not in (1, _FORMAT):
        got = (
            type(meta).__name__ if not isinstance(meta, dict) else f"format {meta.get('format')!r}"
        )
        raise CheckpointError(
            f"checkpoint step {step}: metadata file {str(path)!r} is malformed (got {got}; "
            f"expected a JSON object with 'paths', 'signature', format 1 or {_FORMAT})"
        )
    return meta


def _structure_difference(stored: list, expected: list) -> str:
    """What differs between two leaf-path lists: the first position where they part, and the
    counts (``leaf 3: stored '.a', expected '.b'; 33 stored vs 33 expected``)."""
    n = min(len(stored), len(expected))
    i = next((j for j in range(n) if stored[j] != expected[j]), n)
    show = lambda xs: repr(xs[i])[:80] if i < len(xs) else "nothing"  # noqa: E731
    return (
        f"leaf {i}: stored {show(stored)}, expected {show(expected)} "
        f"({len(stored)} stored leaves vs {len(expected)} expected)"
    )


def _read_failure(exc: BaseException, root: str) -> str:
    """A short reason for a failed orbax read: tensorstore's status code and the file it names
    (tensorstore's own text is several hundred characters of driver names)."""
    text = " ".join(str(exc).split())
    code = re.match(r"([A-Z_]{3,}):", text)
    files = re.findall(r'local file "([^"]+)"', text)
    parts = [code.group(1) if code else type(exc).__name__]
    if files:
        parts.append(f"file {os.path.relpath(files[-1], root)!r}")
    else:
        rest = text[code.end() :].strip() if code else text  # the status code is said once
        parts.append(rest[:80] + ("..." if len(rest) > 80 else ""))
    return ": ".join(p for p in parts if p)


def _plain(value: Any) -> Any:
    """A dataclass tree as plain Python data (tuples become lists), as config ``to_dict`` does."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, tuple | list):
        return [_plain(x) for x in value]
    if isinstance(value, dict):
        return {k: _plain(x) for k, x in value.items()}
    return value
