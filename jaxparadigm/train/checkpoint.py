"""Signed, atomic, rotating checkpoints with orbax-checkpoint (C5.1: "sign models", "roll back").

A checkpoint of a pytree ``state`` at step ``s`` is ``<directory>/<s>/`` written by
``orbax.checkpoint.CheckpointManager``: orbax writes into a temporary directory and renames it only
when complete (atomic; a save killed half-way leaves no step behind), and keeps the last ``keep``.
It holds two items: ``state`` (the leaves, flattened) and ``meta`` (JSON: leaf paths, config,
signature). The signature is

    sha256( for each leaf in tree order: keystr(path) | dtype | shape | raw bytes ;  json(config) )

``restore`` recomputes it from what it read and the *current* config and refuses (raises
:class:`CheckpointSignatureError`) a checkpoint whose arrays were altered or whose config differs.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxparadigm.config import to_dict

__all__ = ["CheckpointSignatureError", "Checkpointer", "state_signature"]

_FORMAT = 1


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


def _signature(paths: list[str], leaves: list[np.ndarray], config: Any) -> str:
    h = hashlib.sha256()
    for path, leaf in zip(paths, leaves, strict=True):
        h.update(f"{path}|{leaf.dtype.str}|{leaf.shape}|".encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
    h.update(_config_json(config).encode())
    return h.hexdigest()


def state_signature(state, config: Any = None) -> str:
    """Hex sha256 over every leaf (path, dtype, shape, bytes) of ``state`` and the config (C5.1)."""
    paths, leaves, _ = _flat(state)
    return _signature(paths, leaves, config)


class Checkpointer:
    """``save(state)`` / ``restore(template)`` signed checkpoints under ``directory`` (C5.1).

    ``state`` must have an integer scalar ``step`` field or key (the checkpoint's step number), or
    pass ``step=`` explicitly. Saves are synchronous and atomic; the last ``keep`` are kept.
    """

    def __init__(self, directory: str | os.PathLike, config: Any = None, keep: int = 3):
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep: got {keep!r}, expected an int >= 1")
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
            "signature": _signature(paths, leaves, self.config),
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

        Verifies the signature against the arrays read and this checkpointer's config; raises
        :class:`CheckpointSignatureError` if they differ, ``FileNotFoundError`` if there is no
        checkpoint, ``ValueError`` if the tree structure does not match ``template``.
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
        arrays = self._manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(targets))
        )["state"]
        leaves = [np.asarray(arrays[f"{i:05d}"]) for i in range(len(t_paths))]
        actual = _signature(t_paths, leaves, self.config)
        if actual != meta.get("signature"):
            raise CheckpointSignatureError(
                f"checkpoint step {step} in {self.directory}: signature mismatch (stored "
                f"{str(meta.get('signature'))[:16]}..., computed {actual[:16]}...); the arrays "
                "were altered or the config differs. Refusing to restore."
            )
        restored = []
        for (_, t), leaf in zip(t_pairs, leaves, strict=True):
            sharding = getattr(t, "sharding", None)
            restored.append(jax.device_put(leaf, sharding) if sharding is not None else leaf)
        return jax.tree_util.tree_unflatten(treedef, restored)

    def close(self) -> None:
        """Release orbax resources."""
        self._manager.close()
