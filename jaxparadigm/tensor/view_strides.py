"""Stride arithmetic of ``View.view``: which reshapes a strided view can express (claim C2.1).

A view ``(shape, strides, offset)`` can be reshaped without copying exactly when every new dim
lies inside one run of old dims that are contiguous among themselves; ``compute_view_strides`` is
PyTorch's ``at::detail::computeStride`` deciding that, and ``infer_view_shape`` resolves the one
``-1`` of a requested shape (``torch.Tensor.view``'s rules). Pure Python on static metadata.
"""

from __future__ import annotations

import math

from jaxparadigm.tensor.static_args import contiguous_strides


def infer_view_shape(target: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """``target`` with its one ``-1`` inferred so ``prod(target) == prod(shape)`` (C2.1).

    ``ValueError`` naming ``target`` when it holds two ``-1``, a size below ``-1``, or cannot
    hold the ``prod(shape)`` elements of the view of shape ``shape``.
    """
    numel = math.prod(shape)
    unknown = [i for i, n in enumerate(target) if n == -1]
    if len(unknown) > 1:
        raise ValueError(f"view shape {target}: only one dim can be -1")
    for i, n in enumerate(target):
        if n < -1:
            raise ValueError(f"view shape {target}: size {n} at dim {i} is invalid")
    known = math.prod(n for n in target if n != -1)
    if unknown:
        if known == 0 or numel % known:
            raise ValueError(
                f"view shape {target} is invalid for a view of {numel} elements (shape {shape})"
            )
        target = tuple(numel // known if n == -1 else n for n in target)
    if math.prod(target) != numel:
        raise ValueError(
            f"view shape {target} is invalid for a view of {numel} elements (shape {shape})"
        )
    return target


def compute_view_strides(
    old_shape: tuple[int, ...], old_strides: tuple[int, ...], new_shape: tuple[int, ...]
) -> tuple[int, ...] | None:
    """PyTorch's ``at::detail::computeStride``: strides for ``new_shape`` or ``None`` (C2.1).

    Walks the old dims from the last, grouping them into chunks that are contiguous among
    themselves (``strides[d-1] == numel(chunk) * strides[chunk end]``); each chunk must be
    covered exactly by a run of new dims, which then get strides ``numel(after) * base``.
    ``None`` when a new dim would span two chunks (a copy is needed).
    """
    if not old_shape:
        return tuple(1 for _ in new_shape)
    numel = math.prod(old_shape)
    if numel == 0:
        if old_shape == new_shape:
            return old_strides
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)
