"""Padding buckets of the sentence encoder's micro-batches (C1.1).

A micro-batch of token rows is padded to the smallest bucket length of :func:`length_buckets` and
its row count to :func:`row_bucket`, so jit compiles a bounded set of shapes for any workload.
"""

from __future__ import annotations

from jaxparadigm.common.numbers import check_int

__all__ = ["length_buckets", "row_bucket"]


def length_buckets(max_seq_length: int, smallest: int = 16) -> tuple[int, ...]:
    """Padding lengths below ``max_seq_length``, then ``max_seq_length`` itself: from each power of
    two ``n >= smallest`` up to ``2n`` in steps of ``max(8, n // 4)`` (16, 24, 32, 40, 48, 56, 64,
    80, 96, ...): multiples of 8, at most 25% padding above 32 tokens, 4 buckets per doubling."""
    max_seq_length = check_int("max_seq_length", max_seq_length, 1, error=ValueError)
    out, n = [], smallest
    while n < max_seq_length:
        out += [b for b in range(n, 2 * n, max(8, n // 4)) if b < max_seq_length]
        n *= 2
    return (*out, max_seq_length)


def row_bucket(n: int, batch_size: int) -> int:
    """Smallest power of two >= ``n``, capped at ``batch_size``: a micro-batch's padded row count,
    so jit sees at most ``floor(log2(batch_size)) + 2`` row counts (C1.1)."""
    return min(1 << (n - 1).bit_length(), batch_size)
