"""The gather that reads back what a scatter wrote: one helper for scatter rules (claim C3.2).

A scatter with ``ScatterDimensionNumbers(update_window_dims, inserted_window_dims,
scatter_dims_to_operand_dims, ...)`` writes each update window into the operand; the gather with
``offset_dims = update_window_dims``, ``collapsed_slice_dims = inserted_window_dims``,
``start_index_map = scatter_dims_to_operand_dims`` (batching dims likewise) and the update's window
sizes reads the same windows back (``inverse_gather``); ``inverse_scatter`` is the mirror map, the
scatter-add that transposes a gather. Used by the gather/scatter VJP rules and the scatter JVP
rules (which update won a slot).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from jax import lax

__all__ = ["inverse_gather", "inverse_scatter"]


class ScatterDims(Protocol):
    """A ``lax.ScatterDimensionNumbers`` as a jaxpr's params hold it: every field a tuple (jax types
    the fields as ``Sequence[int]``, but ``GatherDimensionNumbers`` needs hashable tuples)."""

    @property
    def update_window_dims(self) -> tuple[int, ...]: ...
    @property
    def inserted_window_dims(self) -> tuple[int, ...]: ...
    @property
    def scatter_dims_to_operand_dims(self) -> tuple[int, ...]: ...
    @property
    def operand_batching_dims(self) -> tuple[int, ...]: ...
    @property
    def scatter_indices_batching_dims(self) -> tuple[int, ...]: ...


def inverse_gather(
    dnums: ScatterDims, operand_shape: Sequence[int], updates_shape: Sequence[int]
) -> tuple[lax.GatherDimensionNumbers, tuple[int, ...]]:
    """The gather that reads back, for each update, the operand window a scatter wrote.

    Returns ``(GatherDimensionNumbers, slice_sizes)``: window dims of the update keep their size,
    inserted and batching dims are 1.
    """
    gather_dnums = lax.GatherDimensionNumbers(
        offset_dims=dnums.update_window_dims,
        collapsed_slice_dims=dnums.inserted_window_dims,
        start_index_map=dnums.scatter_dims_to_operand_dims,
        operand_batching_dims=dnums.operand_batching_dims,
        start_indices_batching_dims=dnums.scatter_indices_batching_dims,
    )
    slice_sizes, pos = [], 0
    for i in range(len(operand_shape)):
        if i in dnums.inserted_window_dims or i in dnums.operand_batching_dims:
            slice_sizes.append(1)
        else:
            slice_sizes.append(updates_shape[dnums.update_window_dims[pos]])
            pos += 1
    return gather_dnums, tuple(slice_sizes)


def inverse_scatter(dnums: lax.GatherDimensionNumbers) -> lax.ScatterDimensionNumbers:
    """The ``ScatterDimensionNumbers`` writing back the windows a gather with ``dnums`` read."""
    return lax.ScatterDimensionNumbers(
        update_window_dims=dnums.offset_dims,
        inserted_window_dims=dnums.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dnums.start_index_map,
        operand_batching_dims=dnums.operand_batching_dims,
        scatter_indices_batching_dims=dnums.start_indices_batching_dims,
    )
