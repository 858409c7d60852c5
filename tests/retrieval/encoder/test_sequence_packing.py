"""Sequence packing (C1.1): every sequence exactly once, rows within their length, arrays laid out
with per-sequence segments and positions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.encoder.sequence_packing import pack_rows, packed_arrays


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 40), max_size=60),
    row_length=st.integers(1, 64),
    max_segments=st.integers(1, 8),
)
def test_pack_rows_invariants(lengths, row_length, max_segments):
    rows = pack_rows(lengths, row_length, max_segments)
    flat = sorted(i for row in rows for i in row)
    assert flat == list(range(len(lengths)))
    for row in rows:
        assert 1 <= len(row) <= max_segments
        assert len(row) == 1 or sum(lengths[i] for i in row) <= row_length
    if max_segments == 1:
        assert len(rows) == len(lengths)
    # best fit never leaves two rows that could have been one (when both are singles that fit)
    singles = [lengths[r[0]] for r in rows if len(r) == 1 and lengths[r[0]] <= row_length]
    if max_segments >= 2 and len(singles) >= 2:
        a, b = sorted(singles)[:2]
        assert a + b > row_length


def test_pack_rows_known_case():
    # longest first: 7 opens row 0, 6 opens row 1, 3 fits the fullest row it fits (row 0: free 3)
    assert pack_rows([3, 7, 6, 2], 10, 4) == [[1, 0], [2, 3]]
    with pytest.raises(ValueError, match="row_length"):
        pack_rows([1], 0, 1)
    with pytest.raises(ValueError, match="max_segments"):
        pack_rows([1], 4, 0)


def test_packed_arrays_layout():
    ids = [[101, 5, 102], [101, 7, 8, 102], [101, 102]]
    input_ids, seg, pos = packed_arrays([[1, 0], [2]], ids, n_rows=3, length=8, pad_id=0)
    np.testing.assert_array_equal(input_ids[0], [101, 7, 8, 102, 101, 5, 102, 0])
    np.testing.assert_array_equal(seg[0], [1, 1, 1, 1, 2, 2, 2, 0])
    np.testing.assert_array_equal(pos[0], [0, 1, 2, 3, 0, 1, 2, 0])
    np.testing.assert_array_equal(seg[1], [1, 1, 0, 0, 0, 0, 0, 0])
    assert not seg[2].any() and not input_ids[2].any()
    assert input_ids.dtype == seg.dtype == pos.dtype == np.int32
