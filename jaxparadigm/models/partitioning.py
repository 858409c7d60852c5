"""Logical axis names of a model's arrays and the one table that maps them to mesh axes (C5.2).

A parameter carries one logical name per dimension (or None), set where it is created: the
variable's ``out_sharding`` metadata, as flax NNX's ``nnx.with_partitioning`` sets it
(:func:`axes` gives a layer's ``kernel_metadata`` / ``bias_metadata`` ...; with
``eager_sharding=False`` the names are metadata only: the model is built as before, on any
device, with or without a mesh, and its values do not change). Activations are named where the
model computes them (:func:`constrain`). The names::

    batch   examples of a batch            embed   the model width d_model
    length  positions of a sequence        heads   attention heads (q, k, v columns; out rows)
    vocab   token ids / output classes     mlp     the MLP hidden width

:data:`RULES` maps them to the axes of a ``(fsdp, tensor)`` mesh, after MaxText's logical axis
rules (flax: ``nnx.logical_axis_rules``)::

    batch -> fsdp     embed -> fsdp     heads -> tensor     mlp -> tensor     vocab -> tensor
    length -> None (never split)

so a ``[embed, mlp]`` kernel is split over both axes (a ``1/(F T)`` block per device), attention
heads and the MLP hidden units are split over ``tensor`` and the batch over ``fsdp``. The
residual stream ``[batch, length, d_model]`` is named ``(batch, length, None)``: its width is not
split (naming it ``embed`` would put ``fsdp`` on two of its dimensions).

:func:`logical_spec` turns names into a ``PartitionSpec`` for one array: a dimension whose size
the mesh axis does not divide stays whole on that axis. It refuses, with one ``ValueError``, a
table that maps two logical axes of one array to the same mesh axis (MaxText#4205: the array
would need that axis twice), a table naming one logical axis twice, and a mesh axis the mesh does
not have.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jax
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = [
    "LOGICAL_AXES",
    "axes",
    "RULES",
    "check_rules",
    "constrain",
    "logical_names",
    "logical_spec",
    "sharding_rules",
]

#: Every logical axis name a model of this package uses.
LOGICAL_AXES = ("batch", "length", "vocab", "embed", "heads", "mlp")

#: Logical axis -> mesh axis (None: never split) of the ``(fsdp, tensor)`` mesh (module docstring).
RULES: tuple[tuple[str, str | None], ...] = (
    ("batch", "fsdp"),
    ("embed", "fsdp"),
    ("heads", "tensor"),
    ("mlp", "tensor"),
    ("vocab", "tensor"),
    ("length", None),
)

Names = tuple[str | None, ...]


def axes(*names: str | None) -> dict[str, Any]:
    """A variable's metadata naming its dimensions ``names`` (``kernel_metadata=axes("embed",
    "mlp")``): ``out_sharding`` holds the names; no sharding is applied when it is made."""
    return {"out_sharding": names, "eager_sharding": False}


def check_rules(rules: Sequence[tuple[str, str | None]], mesh_axes: Sequence[str]) -> dict:
    """``{logical: mesh axis or None}`` of ``rules``; ``ValueError`` for a logical axis named
    twice or a mesh axis ``mesh_axes`` does not hold."""
    table: dict[str, str | None] = {}
    for logical, axis in rules:
        if logical in table:
            raise ValueError(
                f"rules: logical axis {logical!r} is mapped twice ({table[logical]!r} and "
                f"{axis!r}); expected one mesh axis per logical axis"
            )
        if axis is not None and axis not in mesh_axes:
            raise ValueError(
                f"rules: {logical!r} -> {axis!r}, expected a mesh axis of {tuple(mesh_axes)} "
                "or None"
            )
        table[logical] = axis
    return table


def logical_spec(
    names: Names,
    shape: Sequence[int],
    rules: Sequence[tuple[str, str | None]],
    axis_sizes: Mapping[str, int],
    where: str = "array",
) -> PartitionSpec:
    """The ``PartitionSpec`` of an array of ``shape`` whose dimensions are named ``names`` (C5.2).

    Dimension ``i`` lies along ``rules[names[i]]`` when that mesh axis's size divides
    ``shape[i]``; otherwise (no name, a name not in the table, ``None``, or not divisible) it is
    not split. ``ValueError`` naming ``where``: a count of names other than the array's rank, or
    two logical axes of the array mapped to one mesh axis (module docstring).
    """
    table = check_rules(rules, tuple(axis_sizes))
    if len(names) != len(shape):
        raise ValueError(
            f"{where}: {len(names)} logical names {names} for an array of shape {tuple(shape)}"
        )
    used: dict[str, str] = {}
    spec: list[str | None] = []
    for name, size in zip(names, shape, strict=True):
        axis = table.get(name) if name is not None else None
        if axis is not None and axis in used:
            raise ValueError(
                f"rules: logical axes {used[axis]!r} and {name!r} of {where} {names} both map "
                f"to mesh axis {axis!r}; expected each mesh axis at most once per array"
            )
        if axis is not None:
            used[axis] = str(name)
        spec.append(axis if axis is not None and size % axis_sizes[axis] == 0 else None)
    return PartitionSpec(*spec)


def logical_names(state: Any) -> dict:
    """The logical names of every variable of an NNX ``state`` (``nnx.split(model)[1]``) as a
    pure dict shaped like ``nnx.to_pure_dict(state)``: a tuple per annotated variable, None for
    a variable without names."""

    def names(v: Any) -> Names | None:
        found = v.get_metadata().get("out_sharding") if isinstance(v, nnx.Variable) else None
        return tuple(found) if found else None

    named = jax.tree_util.tree_map(
        lambda v: v.replace(names(v)), state, is_leaf=lambda x: isinstance(x, nnx.Variable)
    )
    return nnx.to_pure_dict(named)


_ACTIVE: contextvars.ContextVar[tuple[Mesh, tuple] | None] = contextvars.ContextVar(
    "jaxparadigm_sharding_rules", default=None
)


@contextlib.contextmanager
def sharding_rules(mesh: Mesh, rules: Sequence[tuple[str, str | None]]) -> Iterator[None]:
    """Within the block, :func:`constrain` lays activations out on ``mesh`` by ``rules``
    (enter it inside the traced function, so every trace sees it)."""
    check_rules(rules, mesh.axis_names)
    token = _ACTIVE.set((mesh, tuple(rules)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def constrain(x: jax.Array, names: Names) -> jax.Array:
    """``with_sharding_constraint(x, logical_spec(names))`` inside :func:`sharding_rules`; ``x``
    itself outside (one device, or a layout without logical rules)."""
    active = _ACTIVE.get()
    if active is None:
        return x
    mesh, rules = active
    spec = logical_spec(names, x.shape, rules, dict(mesh.shape), "activation")
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
