"""A functional model of PyTorch's aliasing semantics (claims C2.1, C2.5).

PyTorch tensors are views over shared, mutable storages: an in-place op through one view is seen by
every alias of the storage, while ``set_`` rebinds *one* tensor to another storage and leaves its
former aliases alone. JAX arrays are immutable, so here:

* a ``Memory`` is an immutable tuple of flat storages (``jax.Array``), registered as a pytree so it
  can cross ``jax.jit`` boundaries and be carried through ``lax.scan``;
* a ``Handle`` is a static value: a storage id and a ``View`` (hashable, closed over by jitted code);
* every in-place op (``copy_``, ``add_``, ``fill_``, ``setitem_``) returns a *new* ``Memory`` whose
  storage has the written elements replaced, so every handle on that storage reads the write; the
  old ``Memory`` is unchanged;
* ``set_`` returns a new handle bound to the source storage; rebinding the Python name
  (``mem, b = mem.set_(b, src)``) is the analogue of PyTorch's in-place rebind, and every other
  handle keeps the old storage, as in PyTorch (``a = [1,2,3]; b = a.view(-1);
  b.set_([9,8,7])`` leaves ``a == [1,2,3]``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.tensor.broadcast import broadcast_shapes
from jaxparadigm.tensor.static_args import as_int, as_int_tuple, contiguous_strides, dims_arg
from jaxparadigm.tensor.view import View


@dataclasses.dataclass(frozen=True)
class Handle:
    """A tensor in a ``Memory``: which storage (``storage`` id) and how it is viewed (C2.1)."""

    storage: int
    view: View

    @property
    def shape(self) -> tuple[int, ...]:
        return self.view.shape


def _index_is_static(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(p, jax.core.Tracer) for p in parts)


@jax.tree_util.register_pytree_node_class
class Memory:
    """Immutable storages plus PyTorch-style aliasing through ``Handle``s (C2.1, C2.5).

    ``Memory()`` is empty; ``mem, h = mem.tensor(data)`` allocates a storage. Reads are
    ``view.materialize(storage)``; writes are ``storage.at[positions].set(...)`` on the static
    storage positions of the written view.
    """

    __slots__ = ("storages",)

    def __init__(self, storages: tuple = ()) -> None:
        self.storages = tuple(storages)

    def tree_flatten(self) -> tuple[tuple, None]:
        return self.storages, None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple) -> Memory:
        del aux
        return cls(children)

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
                f"{len(self.storages)} storages"
            )
        return self.storages[h.storage]

    def tensor(self, data: Any) -> tuple[Memory, Handle]:
        """Allocate a new storage holding ``data`` flattened; the handle is its row-major view (C2.1)."""
        if isinstance(data, Handle):
            raise TypeError("data must be array-like values, got a Handle (use view/read)")
        array = jnp.asarray(data)
        handle = Handle(len(self.storages), View.contiguous(array.shape))
        return Memory(self.storages + (array.reshape(-1),)), handle

    def storage(self, h: Handle) -> jax.Array:
        """The whole flat storage ``h`` views (C2.1)."""
        return self._storage(h)

    def view(self, h: Handle, *shape: Any) -> Handle:
        """An alias of ``h`` with a new shape (``torch.Tensor.view``); same storage (C2.1, C2.5)."""
        self._storage(h)
        return Handle(h.storage, h.view.view(*dims_arg(shape, "shape")))

    def as_strided(self, h: Handle, shape: Any, strides: Any, offset: int = 0) -> Handle:
        """An alias over ``h``'s storage with any strides; ``offset`` is absolute in the storage.

        ``torch.as_strided(h, shape, strides, offset)`` (C2.1). Every addressed element must lie
        in the storage (``ValueError`` otherwise).
        """
        storage = self._storage(h)
        view = View(as_int_tuple(shape, "shape"), as_int_tuple(strides, "strides"), offset)
        view.check_bounds(storage.shape[0])
        return Handle(h.storage, view)

    def read(self, h: Handle) -> jax.Array:
        """The current value of ``h``: ``h.view.materialize(storage)`` (C2.1)."""
        storage = self._storage(h)
        return h.view.materialize(storage)

    # ----------------------------------------------------------------------------------------
    # In-place ops: a new Memory; every alias of the storage sees the write.
    # ----------------------------------------------------------------------------------------

    def _write(
        self, h: Handle, positions: np.ndarray, values: Any, *, add: bool, what: str
    ) -> Memory:
        storage = jnp.asarray(self._storage(h))
        if positions.size > 1 and np.unique(positions).size != positions.size:
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
        return Memory(tuple(storages))

    def copy_(self, h: Handle, values: Any) -> Memory:
        """``h[...] = values`` (broadcast, cast to the storage dtype), seen by every alias (C2.5)."""
        return self._write(h, h.view.storage_indices(), values, add=False, what="copy_")

    def add_(self, h: Handle, values: Any) -> Memory:
        """``h += values`` (broadcast; float into int storage is a TypeError, as torch) (C2.5)."""
        return self._write(h, h.view.storage_indices(), values, add=True, what="add_")

    def fill_(self, h: Handle, value: Any) -> Memory:
        """Every element of ``h`` set to the scalar ``value``, seen by every alias (C2.5)."""
        if jnp.ndim(value) != 0:
            raise ValueError(f"fill_ value must be a scalar, got shape {jnp.shape(value)}")
        return self._write(h, h.view.storage_indices(), value, add=False, what="fill_")

    def setitem_(self, h: Handle, index: Any, values: Any) -> Memory:
        """``h[index] = values`` (NumPy/PyTorch indexing; ``index`` static) through the storage (C2.5)."""
        self._storage(h)
        if not _index_is_static(index):
            raise TypeError(
                f"setitem_ index must be static (ints, slices, numpy arrays), got a tracer: {index!r}"
            )
        try:
            positions = np.asarray(h.view.storage_indices()[index])
        except (IndexError, TypeError) as err:
            raise ValueError(
                f"setitem_ index {index!r} is invalid for a view of shape {h.view.shape}: {err}"
            ) from None
        return self._write(h, positions, values, add=False, what="setitem_")

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
        is ``View(shape, strides or row-major, offset)`` over that storage (torch's
        ``set_(source, storage_offset, size, stride)``). Aliases of ``h``'s old storage are not
        touched. The dtype must match (TypeError), and the view must fit the storage (PyTorch
        would grow the storage; this model raises ValueError).
        """
        old = self._storage(h)
        offset = as_int(offset, "offset")
        if shape is None and (offset != 0 or strides is not None):
            raise ValueError(
                f"set_ with offset={offset} or strides={strides} needs shape (torch's "
                "set_(source, storage_offset, size, stride))"
            )
        if isinstance(source, Handle):
            storage = self._storage(source, "source")
            mem, sid, default = self, source.storage, source.view
        else:
            array = jnp.asarray(source)
            storage = array.reshape(-1)
            mem = Memory(self.storages + (storage,))
            sid, default = len(self.storages), View.contiguous(array.shape)
        if storage.dtype != old.dtype:
            raise TypeError(
                f"set_: cannot set a tensor of dtype {old.dtype} to a source of dtype "
                f"{storage.dtype}"
            )
        if shape is None:
            view = default
        else:
            shape = as_int_tuple(shape, "shape")
            strides = contiguous_strides(shape) if strides is None else strides
            view = View(shape, as_int_tuple(strides, "strides"), offset)
        view.check_bounds(storage.shape[0], "source storage")
        return mem, Handle(sid, view)
