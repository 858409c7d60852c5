"""Signed, atomic, rotating checkpoints with orbax-checkpoint (C5.1: "sign models", "roll back").

A checkpoint of a pytree ``state`` at step ``s`` is ``<directory>/<s>/`` written by
``orbax.checkpoint.CheckpointManager``: orbax writes into a temporary directory and renames it only
when complete (atomic; a save killed half-way leaves no step behind), and keeps the last ``keep``.
Rotation is atomic too: an old step is first renamed into ``<directory>/.deleted/`` (out of the
listing), then deleted. It holds two items: ``state`` (the leaves, flattened) and ``meta`` (JSON:
leaf paths, signed config, signature, signature kind). Over the message

    m = for each leaf in tree order: keystr(path) | dtype | shape | raw bytes ;  json(config)

the signature is ``sha256(m)`` by default (``"signature_kind": "sha256"``) or, when a secret key is
given (``Checkpointer(..., key=...)`` or the environment variable ``JAXPARADIGM_CHECKPOINT_KEY``),
``HMAC-SHA256(key, m)`` (``"signature_kind": "hmac-sha256"``). Every leaf is signed: parameters,
optimiser state, RNG, counters. ``config`` is :func:`signed_config`: of a project ``Config`` only
what defines the state (``model``, ``data``, ``optim``, ``train.seed``), not run control
(``steps``, ``resume``, cadences, ``out_dir``, ``name``, guard, faults, plots ...), so changing
how long or how verbosely a run goes never locks it out of its own checkpoints.

``restore`` refuses (raises :class:`CheckpointSignatureError`) a checkpoint whose signed config
differs from the current one (naming each differing key with both values), whose arrays or stored
config were altered, or whose signature kind (or key) differs from this checkpointer's. A step
with missing files (a save or deletion interrupted by a crash) is incomplete: it is left out of
:meth:`Checkpointer.all_steps` with a warning. Unreadable or malformed files raise
:class:`CheckpointError` naming the file; neither error is ever a raw traceback of orbax's.

What each signature kind protects against, honestly:

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

import hmac
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxparadigm.common.numbers import check_int
from jaxparadigm.train.checkpoint_signature import (  # noqa: F401 (re-exported)
    _FORMAT,
    KEY_ENV_VAR,
    SIGNED_KEYS,
    CheckpointError,
    CheckpointLayoutError,
    CheckpointSignatureError,
    _config_json,
    _differences,
    _flat,
    _key_bytes,
    _kind,
    _project,
    _read_failure,
    _read_meta,
    _signature,
    _structure_difference,
    signed_config,
    state_signature,
)
from jaxparadigm.train.distributed import on_primary
from jaxparadigm.train.faults import save_point, watching_save
from jaxparadigm.train.interrupt_guard import deferring_interrupts
from jaxparadigm.train.orbax_reads import draining_event_loops
from jaxparadigm.train.sharding import to_host

__all__ = [
    "Checkpointer"
]  # the signature's and errors' names are documented in checkpoint_signature

_DELETED = ".deleted"  # rotation renames old steps here, then deletes them
_TMP_SUFFIX = ".orbax-checkpoint-tmp"  # orbax writes a step here, then renames it
_REQUIRED = ("meta/metadata", "state/_METADATA", "state/manifest.ocdbt")  # a complete step's files


def _on_device(x: Any) -> bool:
    """Whether a template leaf asks for a device array: a ``jax.Array``, or a
    ``jax.ShapeDtypeStruct`` with a sharding (a template of shapes: nothing of it is allocated)."""
    return isinstance(x, jax.Array) or (
        isinstance(x, jax.ShapeDtypeStruct) and getattr(x, "sharding", None) is not None
    )


def _mesh_text(t_pairs) -> str:
    """The meshes a template's arrays lie on, as ``mesh fsdp 4 x tensor 2`` (``one device`` for
    single-device arrays, ``host arrays`` without any)."""
    meshes = []
    for _, x in t_pairs:
        mesh = getattr(getattr(x, "sharding", None), "mesh", None)
        if mesh is not None and mesh.shape not in meshes:
            meshes.append(mesh.shape)
    if meshes:
        return "; ".join("mesh " + " x ".join(f"{k} {v}" for k, v in m.items()) for m in meshes)
    on_device = any(_on_device(x) for _, x in t_pairs)
    return "one device" if on_device else "host arrays"


class Checkpointer:
    """``save(state)`` / ``restore(template)`` signed checkpoints under ``directory`` (C5.1).

    ``state`` must have an integer scalar ``step`` field or key (the checkpoint's step number), or
    pass ``step=`` explicitly. Saves are synchronous and atomic; the last ``keep`` are kept.
    ``config`` is signed through :func:`signed_config`.

    ``key`` (bytes, or str as UTF-8) switches the signature from sha256 (integrity only) to
    HMAC-SHA256 (integrity and authenticity; see the module docstring for what each protects
    against). Without ``key`` the environment variable ``JAXPARADIGM_CHECKPOINT_KEY`` is used when
    set and non-empty (read here, once). ``signature_kind`` is ``"sha256"`` or ``"hmac-sha256"``.
    Usable as a context manager (closes orbax's resources on exit).
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        config: Any = None,
        keep: int = 3,
        key: bytes | str | None = None,
    ) -> None:
        keep = check_int("keep", keep, 1, error=ValueError)
        if key is None:
            key = os.environ.get(KEY_ENV_VAR) or None
        self._key = _key_bytes(key)
        self.signature_kind = _kind(self._key)
        self.directory = os.path.abspath(os.fspath(directory))
        self.config = config
        self._config_json = _config_json(config)
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep,
                enable_async_checkpointing=False,
                create=True,
                todelete_subdir=_DELETED,
                cleanup_tmp_directories=False,  # done by _purge_leftovers, before returning
            ),
        )
        self.incomplete: dict[int, str] = {}
        on_primary(self._purge_leftovers, "checkpoint-init")

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _purge_deleted(self) -> None:
        shutil.rmtree(os.path.join(self.directory, _DELETED), ignore_errors=True)

    def _purge_leftovers(self) -> None:
        """Delete what interrupted runs left: ``.deleted`` and unfinished orbax temporary steps
        (synchronously: orbax's own clean-up runs in the background)."""
        self._purge_deleted()
        for path in Path(self.directory).glob(f"*{_TMP_SUFFIX}*"):
            shutil.rmtree(path, ignore_errors=True)

    def _step_dir(self, step: int) -> Path:
        return Path(self.directory) / str(step)

    def incomplete_reason(self, step: int) -> str | None:
        """Why step ``step``'s directory is not a complete checkpoint (missing files), or None."""
        missing = [f for f in _REQUIRED if not (self._step_dir(step) / f).is_file()]
        return f"missing {', '.join(missing)}" if missing else None

    def all_steps(self) -> list[int]:
        """Steps of the complete checkpoints on disk, ascending. Incomplete ones (a save or
        deletion was interrupted, or files went missing) are left out, recorded in
        ``self.incomplete`` (step -> reason) and warned about once."""
        self._manager.reload()
        steps = []
        for step in sorted(self._manager.all_steps()):
            reason = self.incomplete_reason(step)
            if reason is None:
                steps.append(step)
                continue
            if step not in self.incomplete:
                warnings.warn(
                    f"checkpoint step {step} in {self.directory} is incomplete ({reason}): skipped",
                    RuntimeWarning,
                    stacklevel=2,
                )
            self.incomplete[step] = reason
        return steps

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or None."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def save(self, state: Any, step: int | None = None) -> int:
        """Write ``state`` (signed) as checkpoint ``step`` (default ``int(state.step)``)."""
        if step is None:
            found = state.get("step") if isinstance(state, dict) else getattr(state, "step", None)
            if found is None:
                raise ValueError("step: not given and state has no 'step' field/key")
            step = found
        step = int(step)
        pairs = jax.tree_util.tree_flatten_with_path(state)[0]
        paths, leaves, _ = _flat(state)
        meta = {
            "format": _FORMAT,
            "step": step,
            "paths": paths,
            "config": json.loads(self._config_json),
            "signature_kind": self.signature_kind,
            "signature": _signature(paths, leaves, self._config_json, self._key),
        }
        # jax.Arrays go to orbax as they are: each process writes the shards it holds.
        arrays = {
            f"{i:05d}": x if isinstance(x, jax.Array) else leaf
            for i, ((_, x), leaf) in enumerate(zip(pairs, leaves, strict=True))
        }
        # Ctrl-C during the write is delivered after it (interrupt_guard): no half-done save
        with deferring_interrupts(), watching_save(self.directory, step):
            if self._step_dir(step).is_dir() and self.incomplete_reason(step):  # not restorable:
                on_primary(lambda: self._set_aside(step), "checkpoint-replace")  # replace it
                self._manager.reload()
            with draining_event_loops():  # a failed write leaves no write in flight
                self._manager.save(
                    step,
                    args=ocp.args.Composite(
                        state=ocp.args.StandardSave(arrays), meta=ocp.args.JsonSave(meta)
                    ),
                    force=True,
                )
            self._manager.wait_until_finished()
            save_point("saved")
            if jax.process_index() == 0:
                self._purge_deleted()
        return step

    def _set_aside(self, step: int) -> None:
        """Move step ``step``'s directory into ``.deleted`` (out of the listing)."""
        os.makedirs(os.path.join(self.directory, _DELETED), exist_ok=True)
        os.replace(self._step_dir(step), os.path.join(self.directory, _DELETED, str(step)))

    def _check_meta(self, step: int, meta: dict, t_paths: list[str]) -> None:
        """Refuse a stored config that differs, another structure, or another signature kind."""
        where = f"checkpoint step {step} in {self.directory}"
        stored = meta.get("config")
        if meta.get("format", 1) == 1 and isinstance(stored, dict):  # format 1: whole config
            try:
                stored = _project(stored)
            except (KeyError, TypeError):
                pass  # not a project Config: compared as a whole
        diff = _differences(stored, json.loads(self._config_json))
        if diff:
            raise CheckpointSignatureError(
                f"{where}: its signature covers a different config ({'; '.join(diff)}). "
                "Refusing to restore."
            )
        if meta["paths"] != t_paths:
            raise CheckpointError(
                f"{where}: tree structure differs from the template: "
                f"{_structure_difference(meta['paths'], t_paths)}"
            )
        stored_step = meta.get("step")
        if stored_step is not None and stored_step != step:  # format 2 records its step
            raise CheckpointError(
                f"{where}: its metadata says step {stored_step!r}, not {step}: the folder holds "
                f"another step's checkpoint (copied or renamed). {self._what_to_do(step)}"
            )
        stored_kind = meta.get("signature_kind", "sha256")  # checkpoints before keys: sha256
        if stored_kind != self.signature_kind:
            how = f"set {KEY_ENV_VAR} or pass key=" if self._key is None else "pass no key"
            raise CheckpointSignatureError(
                f"{where}: signature kind {stored_kind!r}, expected {self.signature_kind!r} "
                f"(this checkpointer {'has no' if self._key is None else 'has a'} key); to read "
                f"it, {how}. Refusing to restore."
            )

    def restore(self, template: Any, step: int | None = None) -> Any:
        """Read checkpoint ``step`` (None: the newest complete one) into ``template``'s structure.

        A template leaf that is a ``jax.Array`` or a ``jax.ShapeDtypeStruct`` with a sharding is
        read straight into that sharding (a template of shapes needs no memory of its own: a run
        can free the state it replaces first); any other leaf comes back as a host array.

        Raises :class:`CheckpointSignatureError` if the signed config differs from this
        checkpointer's (naming the keys), the arrays or stored config were altered, or the
        signature kind (or key) differs; :class:`CheckpointError` if the step is incomplete, a file
        is unreadable or malformed, or the tree structure or a leaf's shape differs from
        ``template``; :class:`CheckpointLayoutError` (a ``CheckpointError``) naming the
        template's mesh when the arrays cannot be read into its layout (e.g. out of memory);
        ``FileNotFoundError`` if there is no checkpoint.
        """
        steps = self.all_steps()
        if step is None:
            if not steps:
                raise FileNotFoundError(f"checkpoint directory {self.directory}: no checkpoint")
            step = steps[-1]
        if step not in steps:
            reason = self.incomplete_reason(step) if self._step_dir(step).is_dir() else None
            if reason:
                raise CheckpointError(
                    f"checkpoint step {step} in {self.directory} is incomplete ({reason})"
                )
            raise FileNotFoundError(
                f"checkpoint step {step}: not in {self.directory} (have {steps})"
            )
        t_pairs, treedef = jax.tree_util.tree_flatten_with_path(template)
        t_paths = [jax.tree_util.keystr(p) for p, _ in t_pairs]
        meta = _read_meta(self._step_dir(step) / "meta" / "metadata", step)
        self._check_meta(step, meta, t_paths)
        arrays = self._read_leaves(step, t_pairs)
        for path, (_, t), x in zip(t_paths, t_pairs, arrays, strict=True):
            if np.shape(x) != np.shape(t):  # orbax ignores the target's shape
                raise CheckpointError(
                    f"checkpoint step {step} in {self.directory}: leaf {path} has stored shape "
                    f"{np.shape(x)}, the template's is {np.shape(t)}"
                )
        leaves = [to_host(x) for x in arrays]
        actual = _signature(t_paths, leaves, _config_json(meta.get("config")), self._key)
        if not hmac.compare_digest(actual.encode(), meta["signature"].encode()):
            raise CheckpointSignatureError(
                f"checkpoint step {step} in {self.directory}: signature mismatch (stored "
                f"{meta['signature'][:16]}..., computed {actual[:16]}...); the arrays or the "
                "stored config were altered"
                + (" or the key differs" if self._key is not None else "")
                + ". Refusing to restore."
            )
        restored = [
            x if _on_device(t) else leaf
            for (_, t), x, leaf in zip(t_pairs, arrays, leaves, strict=True)
        ]
        return jax.tree_util.tree_unflatten(treedef, restored)

    def _read_leaves(self, step: int, t_pairs) -> list:
        """The stored leaves: a template device leaf (:func:`_on_device`) is read straight into its
        sharding (each process reads only its shards, whatever device count wrote them); any
        other leaf as a host array."""
        targets = {
            f"{i:05d}": jax.ShapeDtypeStruct(
                np.shape(x),
                x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype,
                sharding=x.sharding if _on_device(x) else None,
            )
            for i, (_, x) in enumerate(t_pairs)
        }
        try:
            with draining_event_loops():  # no read left in flight when one fails (orbax_reads)
                arrays = self._manager.restore(
                    step, args=ocp.args.Composite(state=ocp.args.StandardRestore(targets))
                )["state"]
            return [
                arrays[f"{i:05d}"] if _on_device(x) else np.asarray(arrays[f"{i:05d}"])
                for i, (_, x) in enumerate(t_pairs)
            ]
        except Exception as exc:  # orbax/tensorstore read errors of a damaged step
            reason = _read_failure(exc, self.directory)
            if "file '" not in reason:  # no damaged file: the layout is what failed
                raise CheckpointLayoutError(
                    f"checkpoint step {step} in {self.directory}: cannot be read into this "
                    f"run's layout ({_mesh_text(t_pairs)}): {reason}"
                ) from exc
            raise CheckpointError(
                f"checkpoint step {step} in {self.directory}: its state is unreadable "
                f"({reason}). {self._what_to_do(step)}"
            ) from exc

    def _what_to_do(self, step: int) -> str:
        """The way out of an unusable step: move it aside (resume from the one before) or rename."""
        earlier = [s for s in self.all_steps() if s < step]
        then = f"resume from step {earlier[-1]}" if earlier else "start afresh"
        return (
            f"To {then}, move {str(self._step_dir(step))!r} out of the checkpoint directory; "
            "or give the run another name (name=...)"
        )

    def close(self) -> None:
        """Release orbax resources."""
        self._manager.close()
