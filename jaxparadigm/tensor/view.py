"""A tensor as a view ``(shape, strides, offset)`` over a flat storage (claim C2.1).

Element ``(i_0, ..., i_{n-1})`` of a view lives at storage index
``offset + sum_d i_d * strides[d]`` (strides in elements, PyTorch's convention). Movement ops
(``permute``, ``transpose``, ``expand``, ``slice``, ``narrow``, ``select``, ``unsqueeze``, ``view``)
only recompute this metadata, never touch data; whether a reshape can stay a view is decided by
stride arithmetic alone (PyTorch's ``computeStride``, in ``view_strides``). ``materialize`` turns
the metadata into the ``jax.Array`` it denotes, expressed through ``lax.slice`` / ``reshape`` /
``transpose`` / ``broadcast_in_dim`` whenever the strides nest, and through a gather of static
indices otherwise.

All checks run in Python on the static metadata, before anything is traced.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.common.numbers import check_int
from jaxparadigm.tensor.materialize import materialize_view, materialize_view_jit
from jaxparadigm.tensor.static_args import (
    as_int_tuple,
    contiguous_strides,
    dims_arg,
    storage_size_of,
)
from jaxparadigm.tensor.view_strides import compute_view_strides, infer_view_shape


@dataclasses.dataclass(frozen=True)
class View:
    """Metadata of a strided tensor: ``shape``, element ``strides`` and storage ``offset`` (C2.1).

    ``tensor[i_0, ..., i_{n-1}] = storage[offset + sum_d i_d * strides[d]]``. Frozen and hashable,
    so a ``View`` can be a static argument of ``jax.jit``. Strides and offset are non-negative
    (PyTorch has no negative strides).
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        shape = as_int_tuple(self.shape, "shape")
        strides = as_int_tuple(self.strides, "strides")
        offset = check_int("offset", self.offset, error=TypeError)
        if len(shape) != len(strides):
            raise ValueError(
                f"shape {shape} and strides {strides} must have the same length "
                f"({len(shape)} != {len(strides)})"
            )
        for d, n in enumerate(shape):
            if n < 0:
                raise ValueError(f"shape[{d}] = {n} is negative in shape {shape}; sizes are >= 0")
        for d, s in enumerate(strides):
            if s < 0:
                raise ValueError(
                    f"strides[{d}] = {s} is negative in strides {strides}; strides are >= 0 "
                    "(PyTorch views have no negative strides)"
                )
        if offset < 0:
            raise ValueError(f"offset = {offset} is negative; a storage offset is >= 0")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "strides", strides)
        object.__setattr__(self, "offset", offset)

    # ----------------------------------------------------------------------------------------
    # Construction and queries.
    # ----------------------------------------------------------------------------------------

    @classmethod
    def contiguous(cls, shape: Any, offset: int = 0) -> View:
        """The row-major view of ``shape``: ``strides[d] = prod(shape[d+1:])`` (C2.1)."""
        shape = as_int_tuple(shape, "shape")
        return cls(shape, contiguous_strides(shape), offset)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        """Number of elements, ``prod(shape)`` (C2.1)."""
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        """PyTorch's rule: ignoring size-1 dims, ``strides[d] == prod(shape[d+1:])`` (C2.1)."""
        if self.numel() == 0:
            return True
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if n != 1:
                if s != expected:
                    return False
                expected *= n
        return True

    def max_index(self) -> int:
        """Largest storage index addressed, ``offset + sum_d (shape[d]-1) * strides[d]`` (C2.1).

        ``-1`` for an empty view (it addresses nothing), so a storage needs ``max_index() + 1``
        elements.
        """
        if self.numel() == 0:
            return -1
        return self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))

    def storage_indices(self) -> np.ndarray:
        """Static int64 array of shape ``shape``: the storage index of every element (C2.1)."""
        index = np.full(self.shape, self.offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(self.shape, self.strides, strict=True)):
            axis_shape = [1] * self.ndim
            axis_shape[d] = n
            index = index + (np.arange(n, dtype=np.int64) * s).reshape(axis_shape)
        return index

    def has_internal_overlap(self) -> bool:
        """True when two elements share one storage index (e.g. after ``expand``)."""
        if self.numel() <= 1:
            return False
        dims = sorted((s, n) for n, s in zip(self.shape, self.strides, strict=True) if n > 1)
        if dims and dims[0][0] == 0:
            return True
        span = 1  # every stride must exceed the extent spanned by the smaller ones
        for s, n in dims:
            if s < span:
                return bool(np.unique(self.storage_indices()).size != self.numel())
            span = s * (n - 1) + span
        return False

    def _dim(self, dim: Any, name: str = "dim") -> int:
        dim = check_int(name, dim, error=TypeError)
        if not -self.ndim <= dim < self.ndim:
            raise ValueError(
                f"{name} = {dim} is out of range for a {self.ndim}-d view of shape {self.shape}; "
                f"expected a dim in [{-self.ndim}, {self.ndim - 1}]"
            )
        return dim % self.ndim

    # ----------------------------------------------------------------------------------------
    # Movement ops: each returns a new View and touches no data.
    # ----------------------------------------------------------------------------------------

    def permute(self, *dims: Any) -> View:
        """Reorder: ``shape'[i] = shape[dims[i]]``, ``strides'[i] = strides[dims[i]]`` (C2.1)."""
        dims = dims_arg(dims, "dims")
        norm = tuple(self._dim(d, f"dims[{i}]") for i, d in enumerate(dims))
        if sorted(norm) != list(range(self.ndim)):
            raise ValueError(
                f"permute dims {tuple(dims)} must be a permutation of range({self.ndim}) "
                f"for a view of shape {self.shape}"
            )
        return View(
            tuple(self.shape[d] for d in norm), tuple(self.strides[d] for d in norm), self.offset
        )

    def transpose(self, d0: Any, d1: Any) -> View:
        """Swap two dims (their sizes and strides) (C2.1).

        As PyTorch, a 0-d view takes ``d0``/``d1`` in ``{0, -1}`` (a scalar's dims wrap as if it
        had one) and returns itself.
        """
        if self.ndim == 0:
            for name, d in (("d0", d0), ("d1", d1)):
                if check_int(name, d, error=TypeError) not in (0, -1):
                    raise ValueError(
                        f"{name} = {d} is out of range for a 0-d view; expected 0 or -1"
                    )
            return self
        a, b = self._dim(d0, "d0"), self._dim(d1, "d1")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(*order)

    def expand(self, *shape: Any) -> View:
        """Broadcast size-1 dims (and new leading dims) to ``shape`` with stride 0 (C2.1, C2.4).

        ``-1`` keeps an existing dim. PyTorch's ``inferExpandGeometry``: a non-singleton dim must
        keep its size; a new leading dim of size 1 takes the stride ``size * stride`` of the dim
        after it, and ``0`` when there is none (expanding a 0-d view, as PyTorch).
        """
        target = as_int_tuple(dims_arg(shape, "shape"), "shape")
        if len(target) < self.ndim:
            raise ValueError(
                f"expand shape {target} has fewer dims than the view's shape {self.shape}"
            )
        sizes = [0] * len(target)
        strides = [0] * len(target)
        for i in range(len(target) - 1, -1, -1):
            dim = self.ndim - len(target) + i
            if dim >= 0:
                size, stride = self.shape[dim], self.strides[dim]
            else:
                size = 1
                stride = sizes[i + 1] * strides[i + 1] if i + 1 < len(target) else 0
            want = target[i]
            if want == -1:
                if dim < 0:
                    raise ValueError(
                        f"expand shape {target}: -1 is not allowed at new leading dim {i}"
                    )
                want = size
            elif want < 0:
                raise ValueError(f"expand shape {target}: size {want} at dim {i} is negative")
            if size != want:
                if size != 1:
                    raise ValueError(
                        f"expand shape {target}: size {want} at dim {i} must match the existing "
                        f"size {size} (non-singleton dim) of view shape {self.shape}"
                    )
                size, stride = want, 0
            sizes[i], strides[i] = size, stride
        return View(tuple(sizes), tuple(strides), self.offset)

    def slice(self, dim: Any, start: Any, stop: Any, step: Any = 1) -> View:
        """``tensor[..., start:stop:step, ...]`` along ``dim`` (Python clamping, step > 0) (C2.1).

        ``offset' = offset + start * strides[dim]``, ``strides'[dim] = strides[dim] * step``.
        """
        d = self._dim(dim)
        step = check_int("step", step, error=TypeError)
        if step <= 0:
            raise ValueError(f"slice step = {step} must be positive (views cannot reverse)")
        start = None if start is None else check_int("start", start, error=TypeError)
        stop = None if stop is None else check_int("stop", stop, error=TypeError)
        lo, hi, _ = slice(start, stop, step).indices(self.shape[d])
        size = len(range(lo, hi, step))
        shape = self.shape[:d] + (size,) + self.shape[d + 1 :]
        strides = self.strides[:d] + (self.strides[d] * step,) + self.strides[d + 1 :]
        return View(shape, strides, self.offset + lo * self.strides[d])

    def narrow(self, dim: Any, start: Any, length: Any) -> View:
        """``torch.narrow``: ``length`` entries of ``dim`` from ``start`` (C2.1).

        As PyTorch: ``start`` in ``[-size, size]`` (negative counts from the end), ``length >= 0``,
        ``start + length <= size``, and a 0-d view has nothing to narrow (``ValueError`` otherwise,
        where ``slice`` would clamp). Then ``slice(dim, start, start + length)``.
        """
        if self.ndim == 0:
            raise ValueError("narrow() cannot be applied to a 0-d view (shape ())")
        d = self._dim(dim)
        start, length, n = (
            check_int("start", start, error=TypeError),
            check_int("length", length, error=TypeError),
            self.shape[d],
        )
        if not -n <= start <= n:
            raise ValueError(
                f"narrow start = {start} is out of range for dim {d} of size {n} "
                f"(view shape {self.shape}); expected a start in [{-n}, {n}]"
            )
        if start < 0:
            start += n
        if length < 0 or start + length > n:
            raise ValueError(
                f"narrow length = {length} from start {start} does not fit dim {d} of size {n} "
                f"(view shape {self.shape}); expected 0 <= length <= {n - start}"
            )
        return self.slice(d, start, start + length)

    def unsqueeze(self, dim: Any) -> View:
        """Insert a size-1 dim at ``dim`` in ``[-ndim-1, ndim]``: ``tensor[..., None, ...]`` (C2.1).

        PyTorch's ``inferUnsqueezeGeometry``: its stride is ``shape[dim] * strides[dim]``, or
        ``1`` when it becomes the last dim.
        """
        dim = check_int("dim", dim, error=TypeError)
        if not -self.ndim - 1 <= dim <= self.ndim:
            raise ValueError(
                f"unsqueeze dim = {dim} is out of range for a {self.ndim}-d view of shape "
                f"{self.shape}; expected a dim in [{-self.ndim - 1}, {self.ndim}]"
            )
        dim %= self.ndim + 1
        stride = 1 if dim == self.ndim else self.shape[dim] * self.strides[dim]
        return View(
            self.shape[:dim] + (1,) + self.shape[dim:],
            self.strides[:dim] + (stride,) + self.strides[dim:],
            self.offset,
        )

    def select(self, dim: Any, index: Any) -> View:
        """``tensor[..., index, ...]``: drop ``dim`` and move the offset (C2.1).

        ``offset' = offset + index * strides[dim]``.
        """
        d = self._dim(dim)
        index = check_int("index", index, error=TypeError)
        n = self.shape[d]
        if not -n <= index < n:
            raise ValueError(
                f"select index = {index} is out of range for dim {d} of size {n} "
                f"(view shape {self.shape}); expected an index in [{-n}, {n - 1}]"
            )
        index %= n
        return View(
            self.shape[:d] + self.shape[d + 1 :],
            self.strides[:d] + self.strides[d + 1 :],
            self.offset + index * self.strides[d],
        )

    def view(self, *shape: Any) -> View:
        """Reshape without copying, when the strides allow it (PyTorch's ``computeStride``) (C2.1).

        One ``-1`` is inferred. If the new shape cannot be expressed with strides over the same
        storage, ``ValueError``: ``contiguous()``/``reshape`` would have to copy.
        """
        target = infer_view_shape(as_int_tuple(dims_arg(shape, "shape"), "shape"), self.shape)
        strides = compute_view_strides(self.shape, self.strides, target)
        if strides is None:
            raise ValueError(
                f"view size {target} is not compatible with the view's shape {self.shape} and "
                f"strides {self.strides} (at least one dim spans across two contiguous "
                "subspaces); a view cannot express it. Use contiguous()/reshape, which copies."
            )
        return View(target, strides, self.offset)

    # ----------------------------------------------------------------------------------------
    # Data.
    # ----------------------------------------------------------------------------------------

    def check_bounds(self, storage_size: int, name: str = "storage") -> None:
        """``ValueError`` naming the element and its storage index when the view leaves storage."""
        last = self.max_index()
        if last >= storage_size:
            element = tuple(
                n - 1 if s > 0 else 0 for n, s in zip(self.shape, self.strides, strict=True)
            )
            raise ValueError(
                f"element {element} of the view (shape {self.shape}, strides {self.strides}, "
                f"offset {self.offset}) addresses storage index {last}, but the {name} has only "
                f"{storage_size} elements (valid indices 0..{storage_size - 1})"
            )

    def materialize(self, storage: Any) -> jax.Array:
        """The array the view denotes: ``out[i] = storage[offset + sum_d i_d * strides[d]]`` (C2.1).

        ``storage`` is 1-D; the view is static, so this works under ``jax.jit`` (an eager call runs
        one cached jitted kernel). Nested strides compile to slice/reshape/transpose/broadcast, the
        same HLO as ``storage.reshape(...)`` followed by the native op; anything else (overlapping
        windows, non-divisible strides) to one gather of static indices.
        """
        size = storage_size_of(storage)
        self.check_bounds(size)
        storage = jnp.asarray(storage)
        if isinstance(storage, jax.core.Tracer):
            out = materialize_view(self, storage)
        else:  # eager call: one compiled dispatch per (view, storage shape/dtype)
            out = materialize_view_jit(self, storage)
        chex.assert_shape(out, self.shape)
        return out
