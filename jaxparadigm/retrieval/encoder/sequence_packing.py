"""Sequence packing: several short token sequences per row, no padding between them (C1.1).

A padded batch spends ``rows * bucket - sum(lengths)`` token slots on padding. Packing puts
sequences side by side in rows of ``row_length`` tokens (best-fit decreasing: each sequence, longest
first, goes to the fullest row it still fits), and the encoder keeps them apart with a
block-diagonal attention mask (``segment_ids``, :class:`~jaxparadigm.models.bert.BertEncoder`) and
positions restarting at 0 for each sequence, so each sequence's embedding equals the one it gets
alone. A sequence longer than ``row_length`` gets a row of its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from jaxparadigm.common.numbers import check_int

__all__ = ["pack_rows", "packed_arrays"]


def pack_rows(lengths: Sequence[int], row_length: int, max_segments: int) -> list[list[int]]:
    """Group sequence indices into rows: each row's lengths sum to ``<= row_length`` (a longer
    sequence is alone) with at most ``max_segments`` sequences; every index appears once."""
    row_length = check_int("row_length", row_length, 1, error=ValueError)
    max_segments = check_int("max_segments", max_segments, 1, error=ValueError)
    rows: list[list[int]] = []
    open_rows: list[tuple[int, int]] = []  # (free slots, row number), sorted: best fit = first >= n
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        n = lengths[i]
        at = bisect.bisect_left(open_rows, (n, -1))
        if n > row_length or at == len(open_rows):
            rows.append([i])
            free = row_length - n
            if free > 0 and max_segments > 1:
                bisect.insort(open_rows, (free, len(rows) - 1))
            continue
        free, r = open_rows.pop(at)
        rows[r].append(i)
        if free - n > 0 and len(rows[r]) < max_segments:
            bisect.insort(open_rows, (free - n, r))
    return rows


def packed_arrays(
    rows: Sequence[Sequence[int]],
    ids: Sequence[Sequence[int]],
    n_rows: int,
    length: int,
    pad_id: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(input_ids, segment_ids, position_ids)`` int32 ``[n_rows, length]`` for packed ``rows``.

    Row ``r``'s ``s``-th sequence (``s >= 1``) has ``segment_ids == s`` and positions ``0..len-1``;
    padding has segment 0, ``pad_id`` and position 0. Rows past ``len(rows)`` are all padding.
    """
    input_ids = np.full((n_rows, length), pad_id, dtype=np.int32)
    segments = np.zeros((n_rows, length), dtype=np.int32)
    positions = np.zeros((n_rows, length), dtype=np.int32)
    for r, row in enumerate(rows):
        at = 0
        for s, i in enumerate(row, start=1):
            n = len(ids[i])
            input_ids[r, at : at + n] = ids[i]
            segments[r, at : at + n] = s
            positions[r, at : at + n] = np.arange(n)
            at += n
    return input_ids, segments, positions
