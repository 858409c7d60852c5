"""Signed, atomic, rotating checkpoints with orbax-checkpoint (C5.1: "sign models", "roll back").

A checkpoint of a pytree ``state`` at step ``s`` is ``<directory>/<s>/`` written by
``orbax.checkpoint.CheckpointManager``: orbax writes into a temporary directory and renames it only
when complete (atomic; a save killed half-way leaves no step behind), and keeps the last ``keep``.
It holds two items: ``state`` (the leaves, flattened) and ``meta`` (JSON: leaf paths, config,
signature, signature kind). Over the message

    m = for each leaf in tree order: keystr(path) | dtype | shape | raw bytes ;  json(config)

the signature is ``sha256(m)`` by default (``"signature_kind": "sha256"``) or, when a secret key is
given (``Checkpointer(..., key=...)`` or the environment variable ``JAXPARADIGM_CHECKPOINT_KEY``),
``HMAC-SHA256(key, m)`` (``"signature_kind": "hmac-sha256"``). ``restore`` recomputes it from what
it read and the *current* config and refuses (raises :class:`CheckpointSignatureError`) a
checkpoint whose arrays were altered, whose config differs, or whose signature kind (or key)
differs from this checkpointer's.

What each protects against, honestly:

* ``sha256`` (no key) is an *integrity check*, not an authentication: it catches accidental
  corruption (bit rot, a truncated or mixed-up file), a checkpoint of another config, and naive
  edits. It does **not** stop deliberate tampering: the algorithm is public and the digest is
  stored next to the data, so anyone who can write the checkpoint can edit the arrays and store
  the recomputed sha256; such a checkpoint restores without complaint.
* ``hmac-sha256`` (keyed) also authenticates: without the key nobody can produce a valid signature
  for altered arrays, so edited weights (with or without a recomputed plain sha256) are refused.
  It does not encrypt (the weights stay readable), does not protect against anyone who holds the
  key (keep it out of the run directory and config), and does not stop an old, genuinely signed
  checkpoint of the same config and key from being put back in place of a newer one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxparadigm.config import to_dict

__all__ = ["KEY_ENV_VAR", "CheckpointSignatureError", "Checkpointer", "state_signature"]

_FORMAT = 1
KEY_ENV_VAR = "JAXPARADIGM_CHECKPOINT_KEY"


class CheckpointSignatureError(ValueError):
    """A checkpoint's stored signature does not match its contents and the current config."""


def _config_json(config: Any) -> str:
    if config is None:
        return "null"
    plain = to_dict(config) if not isinstance(config, dict) else config
    return json.dumps(plain, sort_keys=True, default=str)


def _flat(state) -> tuple[list[str], list[np.ndarray], Any]:
    pairs, treedef = jax.tree_util.tree_flatten_with_path(state)
    paths = [jax.tree_util.keystr(p) for p, _ in pairs]
    leaves = [np.asarray(jax.device_get(x)) for _, x in pairs]
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
    paths: list[str], leaves: list[np.ndarray], config: Any, key: bytes | None = None
) -> str:
    h = hashlib.sha256() if key is None else hmac.new(key, digestmod=hashlib.sha256)
    for path, leaf in zip(paths, leaves, strict=True):
        h.update(f"{path}|{leaf.dtype.str}|{leaf.shape}|".encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
    h.update(_config_json(config).encode())
    return h.hexdigest()


def state_signature(state, config: Any = None, key: bytes | str | None = None) -> str:
    """Hex sha256 over every leaf (path, dtype, shape, bytes) of ``state`` and the config (C5.1).

    With ``key`` (bytes, or str as UTF-8) it is ``HMAC-SHA256(key, ...)`` over the same message.
    """
    paths, leaves, _ = _flat(state)
    return _signature(paths, leaves, config, _key_bytes(key))


class Checkpointer:
    """``save(state)`` / ``restore(template)`` signed checkpoints under ``directory`` (C5.1).

    ``state`` must have an integer scalar ``step`` field or key (the checkpoint's step number), or
    pass ``step=`` explicitly. Saves are synchronous and atomic; the last ``keep`` are kept.

    ``key`` (bytes, or str as UTF-8) switches the signature from sha256 (integrity only) to
    HMAC-SHA256 (integrity and authenticity; see the module docstring for what each protects
    against). Without ``key`` the environment variable ``JAXPARADIGM_CHECKPOINT_KEY`` is used when
    set and non-empty (read here, once). ``signature_kind`` is ``"sha256"`` or ``"hmac-sha256"``.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        config: Any = None,
        keep: int = 3,
        key: bytes | str | None = None,
    ):
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep: got {keep!r}, expected an int >= 1")
        if key is None:
            key = os.environ.get(KEY_ENV_VAR) or None
        self._key = _key_bytes(key)
        self.signature_kind = _kind(self._key)
        self.directory = os.path.abspath(os.fspath(directory))
        self.config = config
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep, enable_async_checkpointing=False, create=True
            ),
        )

    def all_steps(self) -> list[int]:
        """Steps of the complete checkpoints on disk, ascending."""
        self._manager.reload()
        return sorted(self._manager.all_steps())

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or None."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def save(self, state, step: int | None = None) -> int:
        """Write ``state`` (signed) as checkpoint ``step`` (default ``int(state.step)``)."""
        if step is None:
            found = state.get("step") if isinstance(state, dict) else getattr(state, "step", None)
            if found is None:
                raise ValueError("step: not given and state has no 'step' field/key")
            step = found
        step = int(step)
        paths, leaves, _ = _flat(state)
        meta = {
            "format": _FORMAT,
            "step": step,
            "paths": paths,
            "config": json.loads(_config_json(self.config)),
            "signature_kind": self.signature_kind,
            "signature": _signature(paths, leaves, self.config, self._key),
        }
        arrays = {f"{i:05d}": leaf for i, leaf in enumerate(leaves)}
        self._manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)
            ),
            force=True,
        )
        self._manager.wait_until_finished()
        return step

    def restore(self, template, step: int | None = None):
        """Read checkpoint ``step`` (default: latest) into the structure of ``template``.

        Verifies the signature against the arrays read and this checkpointer's config (and key);
        raises :class:`CheckpointSignatureError` if they differ or the stored signature kind is not
        this checkpointer's (a keyed checkpointer never accepts a plain sha256, and vice versa),
        ``FileNotFoundError`` if there is no checkpoint, ``ValueError`` if the tree structure does
        not match ``template``.
        """
        steps = self.all_steps()
        if step is None:
            if not steps:
                raise FileNotFoundError(f"checkpoint directory {self.directory}: no checkpoint")
            step = steps[-1]
        if step not in steps:
            raise FileNotFoundError(
                f"checkpoint step {step}: not in {self.directory} (have {steps})"
            )
        t_pairs, treedef = jax.tree_util.tree_flatten_with_path(template)
        t_paths = [jax.tree_util.keystr(p) for p, _ in t_pairs]
        targets = {
            f"{i:05d}": jax.ShapeDtypeStruct(np.shape(x), getattr(x, "dtype", np.asarray(x).dtype))
            for i, (_, x) in enumerate(t_pairs)
        }
        meta = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))[
            "meta"
        ]
        if meta.get("paths") != t_paths:
            raise ValueError(
                f"checkpoint step {step}: tree structure differs from the template "
                f"({len(meta.get('paths', []))} stored leaves vs {len(t_paths)} expected)"
            )
        stored_kind = meta.get("signature_kind", "sha256")  # checkpoints before keys: sha256
        if stored_kind != self.signature_kind:
            how = f"set {KEY_ENV_VAR} or pass key=" if self._key is None else "pass no key"
            raise CheckpointSignatureError(
                f"checkpoint step {step} in {self.directory}: signature kind {stored_kind!r}, "
                f"expected {self.signature_kind!r} (this checkpointer "
                f"{'has no' if self._key is None else 'has a'} key); to read it, {how}. "
                "Refusing to restore."
            )
        arrays = self._manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(targets))
        )["state"]
        leaves = [np.asarray(arrays[f"{i:05d}"]) for i in range(len(t_paths))]
        actual = _signature(t_paths, leaves, self.config, self._key)
        if not hmac.compare_digest(actual.encode(), str(meta.get("signature")).encode()):
            raise CheckpointSignatureError(
                f"checkpoint step {step} in {self.directory}: signature mismatch (stored "
                f"{str(meta.get('signature'))[:16]}..., computed {actual[:16]}...); the arrays "
                "were altered or the config differs"
                + (" or the key differs" if self._key is not None else "")
                + ". Refusing to restore."
            )
        restored = []
        for (_, t), leaf in zip(t_pairs, leaves, strict=True):
            sharding = getattr(t, "sharding", None)
            restored.append(jax.device_put(leaf, sharding) if sharding is not None else leaf)
        return jax.tree_util.tree_unflatten(treedef, restored)

    def close(self) -> None:
        """Release orbax resources."""
        self._manager.close()
