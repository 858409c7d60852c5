"""A functional model of PyTorch's aliasing semantics (claims C2.1, C2.5).

PyTorch tensors are views over shared, mutable storages: an in-place op through one view is seen by
every alias of the storage, while ``set_`` rebinds *one* tensor to another storage and leaves its
former aliases alone. JAX arrays are immutable, so here:

* a ``Memory`` is an immutable tuple of flat storages (``jax.Array``), registered as a pytree so it
  can cross ``jax.jit`` boundaries and be carried through ``lax.scan``;
* a ``Handle`` is a static value: a storage id and a ``View`` (hashable, closed over by jit);
* every in-place op (``copy_``, ``add_``, ``fill_``, ``setitem_``) returns a *new* ``Memory`` whose
  storage has the written elements replaced, so every handle on that storage reads the write; the
  old ``Memory`` is unchanged;
* ``set_`` returns a new handle bound to the source storage; rebinding the Python name
  (``mem, b = mem.set_(b, src)``) is the analogue of PyTorch's in-place rebind, and every other
  handle keeps the old storage (``b = a.view(-1); b.set_([9,8,7])`` leaves ``a`` as it was).

Every storage gets a process-unique id when it is allocated (``tensor``, ``set_`` with values); the
ids are the static part of the ``Memory`` pytree and a ``Handle`` carries the id of its storage, so
a handle from another ``Memory`` (or from a sibling that allocated a different storage at the same
position) is refused with ``ValueError`` instead of reading someone else's data. In-place ops keep
the ids (same storages, new values). The ids are in the treedef: a jitted function taking a
``Memory`` compiles once per distinct set of storages, not once per in-place op.

Writes whose elements share one storage element: an overlapping written-to *view* (``expand``ed,
or strides that collide) is refused, as PyTorch refuses it ("unsupported operation: more than one
element of the written-to tensor refers to a single memory location"); ``fill_`` is the
exception, as in PyTorch (one value per shared element is well defined). A ``setitem_`` whose
*advanced* index repeats a position (``t[rows, cols] = v`` with ``(2, 2)`` twice) is allowed, and
the last write in row-major index order wins -- what PyTorch does with
``torch.use_deterministic_algorithms(True)``; PyTorch's own documentation calls the result
undefined otherwise (its default CPU kernel gave another value for 100,000 repeats of one index).
An advanced index into an overlapping view is refused (PyTorch deprecates it: "Use of ``index_put_``
on expanded tensors is deprecated").
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.common.numbers import check_int, is_int
from jaxparadigm.tensor.broadcast import broadcast_shapes
from jaxparadigm.tensor.static_args import as_int_tuple, contiguous_strides, dims_arg
from jaxparadigm.tensor.torch_index import check_masks, torch_index_steps
from jaxparadigm.tensor.view import View

_storage_ids = itertools.count(1)  # process-unique storage ids (0 is never issued)


@dataclasses.dataclass(frozen=True)
class Handle:
    """A tensor in a ``Memory`` (C2.1): which storage (position ``storage`` in the Memory, with
    identity ``uid``) and how it is viewed (``view``)."""

    storage: int
    view: View
    uid: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.view.shape


def _index_is_static(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(p, jax.core.Tracer) for p in parts)


def _is_advanced(index: Any) -> bool:
    """NumPy's rule: an index with an array, list or bool part is advanced (it may repeat)."""
    parts = index if isinstance(index, tuple) else (index,)
    return not all(p is None or p is Ellipsis or isinstance(p, slice) or is_int(p) for p in parts)


def _last_write_wins(flat: np.ndarray, values: jax.Array) -> tuple[np.ndarray, jax.Array]:
    """Keep, for each repeated storage position, only the last write (row-major index order)."""
    reversed_first = np.unique(flat[::-1], return_index=True)[1]
    keep = np.sort(flat.size - 1 - reversed_first)
    return flat[keep], values[keep]


@jax.tree_util.register_pytree_node_class
class Memory:
    """Immutable storages plus PyTorch-style aliasing through ``Handle`` objects (C2.1, C2.5).

    ``Memory()`` is empty; ``mem, h = mem.tensor(data)`` allocates a storage. Reads are
    ``view.materialize(storage)``; writes are ``storage.at[positions].set(...)`` on the static
    storage positions of the written view.
    """

    __slots__ = ("storages", "uids")

    def __init__(self, storages: tuple = (), uids: tuple[int, ...] | None = None) -> None:
        self.storages = tuple(storages)
        if uids is None:  # new storages: new identities
            uids = tuple(next(_storage_ids) for _ in self.storages)
        if len(uids) != len(self.storages):
            raise ValueError(f"uids: got {len(uids)} ids for {len(self.storages)} storages")
        self.uids = tuple(uids)

    def tree_flatten(self) -> tuple[tuple, tuple[int, ...]]:
        return self.storages, self.uids

    @classmethod
    def tree_unflatten(cls, aux: tuple[int, ...], children: tuple) -> Memory:
        return cls(children, aux)

    def _allocate(self, flat: jax.Array, view: View) -> tuple[Memory, Handle]:
        mem = Memory(self.storages + (flat,), self.uids + (next(_storage_ids),))
        return mem, Handle(len(self.storages), view, mem.uids[-1])

    def __repr__(self) -> str:
        shapes = ", ".join(f"{s.dtype}[{s.shape[0]}]" for s in self.storages)
        return f"Memory({shapes})"

    # ----------------------------------------------------------------------------------------
    # Handles.
    # ----------------------------------------------------------------------------------------

    def _storage(self, h: Any, name: str = "h") -> jax.Array:
        if not isinstance(h, Handle):
            raise TypeError(f"{name} must be a Handle, got {type(h).__name__}")
        if not 0 <= h.storage < len(self.storages):
            raise ValueError(
                f"{name} refers to storage {h.storage}, but this Memory has "
                f"{len(self.storages)} storages (is it a handle from another Memory?)"
            )
        if self.uids[h.storage] != h.uid:
            raise ValueError(
                f"{name} is a handle from another Memory: its storage {h.storage} has id {h.uid}, "
                f"this Memory's storage {h.storage} has id {self.uids[h.storage]}; use the "
                "handles this Memory's tensor()/set_() returned"
            )
        return self.storages[h.storage]

    def tensor(self, data: Any) -> tuple[Memory, Handle]:
        """A new storage holding ``data`` flattened; the handle is its row-major view (C2.1)."""
        if isinstance(data, Handle):
            raise TypeError("data must be array-like values, got a Handle (use view/read)")
        array = jnp.asarray(data)
        return self._allocate(array.reshape(-1), View.contiguous(array.shape))

    def storage(self, h: Handle) -> jax.Array:
        """The whole flat storage ``h`` views (C2.1)."""
        return self._storage(h)

    def view(self, h: Handle, *shape: Any) -> Handle:
        """An alias of ``h`` with a new shape (``torch.Tensor.view``); same storage (C2.1, C2.5)."""
        self._storage(h)
        return dataclasses.replace(h, view=h.view.view(*dims_arg(shape, "shape")))

    def as_strided(self, h: Handle, shape: Any, strides: Any, offset: int | None = None) -> Handle:
        """An alias over ``h``'s storage with any strides; ``offset`` is absolute in the storage,
        and ``None`` keeps ``h``'s own offset (``torch.as_strided``'s default).

        ``torch.as_strided(h, shape, strides, offset)`` (C2.1). Every addressed element must lie
        in the storage (``ValueError`` otherwise). Two indices may address one element (an
        overlapping view): reads see it twice; ``copy_``/``add_``/``setitem_`` refuse to write
        through it (``fill_`` may).
        """
        storage = self._storage(h)
        offset = h.view.offset if offset is None else check_int("offset", offset, error=TypeError)
        view = View(as_int_tuple(shape, "shape"), as_int_tuple(strides, "strides"), offset)
        view.check_bounds(storage.shape[0])
        return dataclasses.replace(h, view=view)

    def read(self, h: Handle) -> jax.Array:
        """The current value of ``h``: ``h.view.materialize(storage)`` (C2.1)."""
        storage = self._storage(h)
        return h.view.materialize(storage)

    # ----------------------------------------------------------------------------------------
    # In-place ops: a new Memory; every alias of the storage sees the write.
    # ----------------------------------------------------------------------------------------

    def _write(
        self,
        h: Handle,
        positions: np.ndarray,
        values: Any,
        *,
        add: bool,
        what: str,
        repeats: bool = False,
    ) -> Memory:
        """Write ``values`` at the static storage ``positions``; with ``repeats`` a position may
        appear several times and its last write wins, otherwise repeats are refused."""
        storage = jnp.asarray(self._storage(h))
        unique = positions.size <= 1 or np.unique(positions).size == positions.size
        if not unique and not repeats:
            raise ValueError(
                f"{what}: more than one element of the written-to view (shape {h.view.shape}, "
                f"strides {h.view.strides}) refers to a single storage element; read() and "
                "tensor() a copy first (PyTorch: clone())"
            )
        values = jnp.asarray(values)
        target = positions.shape
        try:
            out_shape = broadcast_shapes(values.shape, target)
        except ValueError:
            out_shape = None
        if out_shape != target:
            raise ValueError(
                f"{what}: values of shape {values.shape} cannot be broadcast to the written "
                f"shape {target}"
            )
        if add:
            result = jnp.result_type(storage.dtype, values)
            if not np.can_cast(result, storage.dtype, casting="same_kind"):
                raise TypeError(
                    f"{what}: result type {result} can't be cast to the storage dtype "
                    f"{storage.dtype} (as torch's in-place add)"
                )
        values = jnp.broadcast_to(values.astype(storage.dtype), target).reshape(-1)
        flat = positions.reshape(-1)
        if flat.size == 0:
            return self
        if not unique:
            flat, values = _last_write_wins(flat, values)
        start = int(flat[0])
        if np.array_equal(flat, np.arange(start, start + flat.size)):
            # A contiguous run: a static slice update instead of a scatter.
            if add:
                values = storage[start : start + flat.size] + values
            new = jax.lax.dynamic_update_slice(storage, values, (start,))
        elif add:
            new = storage.at[flat].add(values, unique_indices=True)
        else:
            new = storage.at[flat].set(values, unique_indices=True)
        chex.assert_equal_shape([new, storage])
        storages = list(self.storages)
        storages[h.storage] = new
        return Memory(tuple(storages), self.uids)

    def copy_(self, h: Handle, values: Any) -> Memory:
        """``h[...] = values`` (broadcast, in the storage dtype), seen by every alias (C2.5)."""
        return self._write(h, h.view.storage_indices(), values, add=False, what="copy_")

    def add_(self, h: Handle, values: Any) -> Memory:
        """``h += values`` (broadcast; float into int storage is a TypeError, as torch) (C2.5)."""
        return self._write(h, h.view.storage_indices(), values, add=True, what="add_")

    def fill_(self, h: Handle, value: Any) -> Memory:
        """Every element of ``h`` set to the scalar ``value``, seen by every alias (C2.5).

        As PyTorch's ``fill_``, an overlapping view (made by ``expand``) is filled too: every write
        to a shared storage element writes the same value, so the result is defined.
        """
        if jnp.ndim(value) != 0:
            raise ValueError(f"fill_ value must be a scalar, got shape {jnp.shape(value)}")
        positions = h.view.storage_indices()
        return self._write(h, positions, value, add=False, what="fill_", repeats=True)

    def setitem_(self, h: Handle, index: Any, values: Any) -> Memory:
        """``h[index] = values`` (PyTorch's indexing, :mod:`~jaxparadigm.tensor.torch_index`;
        ``index`` static) into the storage (C2.5).

        A basic index (ints, slices) writes a sub-view, which must not overlap itself. An advanced
        index (arrays, lists, masks) may repeat a position: the last write in row-major index order
        wins (PyTorch under ``use_deterministic_algorithms(True)``; see the module docstring); an
        advanced index into an overlapping view is refused.
        """
        self._storage(h)
        if not _index_is_static(index):
            raise TypeError(
                "setitem_ index must be static (ints, slices, numpy arrays), "
                f"got a tracer: {index!r}"
            )
        try:
            check_masks(index, h.view.shape)
            positions = h.view.storage_indices()
            for step in torch_index_steps(index):  # integers first, as PyTorch
                positions = np.asarray(positions[step])
        except (IndexError, TypeError) as err:
            raise ValueError(
                f"setitem_ index {index!r} is invalid for a view of shape {h.view.shape}: {err}"
            ) from None
        advanced = _is_advanced(index)
        if advanced and h.view.has_internal_overlap():
            raise ValueError(
                f"setitem_: advanced index into an overlapping view (shape {h.view.shape}, "
                f"strides {h.view.strides}); read() and tensor() a copy first (PyTorch: clone(); "
                "it deprecates index_put_ on expanded tensors)"
            )
        return self._write(h, positions, values, add=False, what="setitem_", repeats=advanced)

    def set_(
        self,
        h: Handle,
        source: Any,
        offset: int = 0,
        shape: Any = None,
        strides: Any = None,
    ) -> tuple[Memory, Handle]:
        """Rebind ``h`` (only ``h``) to ``source``'s storage, as ``torch.Tensor.set_`` (C2.5).

        ``source`` is a ``Handle`` (share its storage) or array values (a new storage). Without
        ``shape`` the new handle takes ``source``'s view (its shape for values); with it, the view
        is ``View(shape, strides, source.offset + offset)`` over that storage, where ``strides``
        defaults as in torch: the row-major layout must fit the storage, then ``h`` keeps its own
        strides when ``shape`` is its shape (see :meth:`_set_strides`), else row-major; and
        ``source`` must be contiguous (torch's ``set_(source, storage_offset, size, stride)``
        with a tensor ``source``: the offset counts from the source's own, ``ValueError``
        otherwise). Aliases of ``h``'s old storage are not touched. The dtype must match
        (TypeError), and the view must fit the storage (PyTorch would grow a resizable storage;
        this model raises ValueError, as PyTorch does for a fixed-size one).
        """
        old = self._storage(h)
        offset = check_int("offset", offset, error=TypeError)
        if shape is None and (offset != 0 or strides is not None):
            raise ValueError(
                f"set_ with offset={offset} or strides={strides} needs shape (torch's "
                "set_(source, storage_offset, size, stride))"
            )
        if isinstance(source, Handle):
            storage = self._storage(source, "source")
            mem = self
        else:
            array = jnp.asarray(source)
            storage = array.reshape(-1)
            mem, source = self._allocate(storage, View.contiguous(array.shape))
        if storage.dtype != old.dtype:
            raise TypeError(
                f"set_: cannot set a tensor of dtype {old.dtype} to a source of dtype "
                f"{storage.dtype}"
            )
        if shape is None:
            view = source.view
        else:
            if not source.view.is_contiguous():
                raise ValueError(
                    f"set_: source (shape {source.view.shape}, strides {source.view.strides}) "
                    "must be contiguous to be used as storage with an offset, shape and strides "
                    "(as torch's set_(source, storage_offset, size, stride))"
                )
            shape = as_int_tuple(shape, "shape")
            start = source.view.offset + offset
            if strides is None:
                strides = self._set_strides(h, shape, start, storage.shape[0])
            view = View(shape, as_int_tuple(strides, "strides"), start)
        view.check_bounds(storage.shape[0], "source storage")
        return mem, dataclasses.replace(source, view=view)

    @staticmethod
    def _set_strides(h: Handle, shape: tuple[int, ...], start: int, size: int) -> tuple[int, ...]:
        """Strides of ``set_(h, source, offset, shape)`` without ``strides``, as torch: it checks
        the row-major layout against the storage (``setStorage: ... out of bounds``), then its
        resize returns early when the size is unchanged, so ``h`` keeps its strides. Where those
        kept strides address past the storage torch reads past its end; we raise ValueError."""
        row_major = contiguous_strides(shape)
        if shape != h.view.shape or h.view.strides == row_major:
            return row_major  # set_ checks this view against the storage
        View(shape, row_major, start).check_bounds(size, "source storage")  # torch's first check
        try:
            View(shape, h.view.strides, start).check_bounds(size, "source storage")
        except ValueError as err:
            raise ValueError(
                f"set_: the tensor keeps its strides {h.view.strides} for an unchanged shape "
                f"{shape} (as torch does), and they leave the source storage: {err} (torch "
                "reads past the storage's end here)"
            ) from None
        return h.view.strides
