"""broadcast_shapes against np.broadcast_shapes, TF-style unknown dims, and the explanation table."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.tensor import broadcast_shapes, explain_broadcast


class BroadcastShapesTest(parameterized.TestCase):
    @parameterized.named_parameters(
        ("c2_4_a", [(3, 1), (1, 4)], (3, 4)),
        ("c2_4_b", [(2, 1, 5), (5,)], (2, 1, 5)),
        ("none_vs_1", [(None,), (1,)], (None,)),
        ("none_vs_n", [(None, 3), (4, 1)], (4, 3)),
        ("n_vs_none", [(4,), (None,)], (4,)),
        ("none_vs_none", [(None,), (None,)], (None,)),
        ("one_vs_none", [(1,), (None,)], (None,)),
        ("three_way", [(None, 1), (1, 5), (3, 1, 1)], (3, None, 5)),
        ("empty", [], ()),
        ("scalar", [(), (2,)], (2,)),
        ("int_shape", [3, (2, 1)], (2, 3)),
        ("zero", [(0,), (1,)], (0,)),
        ("numpy_1d", [np.array([3, 1]), (4,)], (3, 4)),
        ("numpy_uint8_1d", [np.array([2, 1], np.uint8), np.array([5])], (2, 5)),
        ("numpy_0d_is_one_dim", [np.array(3), (2, 1)], (2, 3)),
        ("numpy_int_scalar", [np.int64(3), (1,)], (3,)),
        ("numpy_empty", [np.array([], np.int64), (2,)], (2,)),
        ("jax_1d", [jnp.array([3, 1]), (4,)], (3, 4)),
    )
    def test_rules(self, shapes, expected):
        self.assertEqual(broadcast_shapes(*shapes), expected)

    def test_error_names_both_shapes_axis_and_sizes(self):
        with self.assertRaises(ValueError) as ctx:
            broadcast_shapes((2, 3), (7, 1), (4, 3, 4))
        msg = str(ctx.exception)
        self.assertIn("(2, 3)", msg)
        self.assertIn("(4, 3, 4)", msg)
        self.assertIn("axis -1", msg)
        self.assertIn("sizes 3 and 4", msg)

    def test_none_then_conflicting_sizes(self):
        with self.assertRaisesRegex(ValueError, "sizes 3 and 4"):
            broadcast_shapes((None,), (3,), (4,))

    @parameterized.named_parameters(
        ("negative", [(2, -1)], ValueError, "dim 1 is -1"),
        ("float", [(2.0,)], TypeError, "dim 0"),
        ("string", ["ab"], TypeError, "shape #0"),
        ("bool", [(True,)], TypeError, "not an int"),
        ("array_2d", [np.array([[3, 1]])], TypeError, r"1-D integer array.*\(1, 2\)"),
        ("array_float", [np.array([3.0, 1.0])], TypeError, "dtype float64"),
        ("array_negative", [np.array([3, -1])], ValueError, "dim 1 is -1"),
    )
    def test_bad_input(self, shapes, error, pattern):
        with self.assertRaisesRegex(error, pattern):
            broadcast_shapes(*shapes)


_dim = st.integers(0, 4)
_shape = st.lists(_dim, max_size=5).map(tuple)


@st.composite
def _compatible_shapes(draw):
    """Shapes built to broadcast (so the equality check sees many non-error cases)."""
    result = draw(st.lists(_dim, max_size=5))
    shapes = []
    for _ in range(draw(st.integers(1, 4))):
        keep = draw(st.integers(0, len(result)))
        tail = result[len(result) - keep :]
        shapes.append(tuple(n if draw(st.booleans()) else 1 for n in tail))
    return shapes


def _check_against_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="do not broadcast"):
            broadcast_shapes(*shapes)
        return
    assert broadcast_shapes(*shapes) == expected


_CASES = st.one_of(_compatible_shapes(), st.lists(_shape, max_size=4))


@settings(max_examples=2000, deadline=None)
@given(_CASES)
def test_matches_numpy(shapes):
    _check_against_numpy(shapes)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None)
@given(_CASES)
def test_matches_numpy_many(shapes):
    _check_against_numpy(shapes)


def test_traced_array_shape_is_a_type_error():
    with pytest.raises(TypeError, match="traced array"):
        jax.jit(lambda s: jnp.zeros(broadcast_shapes(s, (1,))))(jnp.array([2]))


@settings(max_examples=300, deadline=None)
@given(_CASES)
def test_array_shapes_equal_tuple_shapes(shapes):
    """Each shape given as a 1-D integer ndarray broadcasts exactly as the tuple does (and as
    np.broadcast_shapes, which also accepts arrays)."""
    arrays = [np.asarray(s, np.int64) for s in shapes]
    try:
        expected = broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="do not broadcast"):
            broadcast_shapes(*arrays)
        return
    assert broadcast_shapes(*arrays) == expected == np.broadcast_shapes(*arrays)


def test_matches_numpy_exhaustively_on_small_shapes():
    """Every pair of shapes with dims in 0..3 and rank <= 3 (7,225 pairs), and every triple of
    rank <= 2 (9,261 triples)."""
    dims = range(4)
    shapes = [()] + [(a,) for a in dims]
    shapes += [(a, b) for a in dims for b in dims]
    small = list(shapes)
    shapes += [(a, b, c) for a in dims for b in dims for c in dims]
    checked = 0
    for a in shapes:
        for b in shapes:
            _check_against_numpy([a, b])
            checked += 1
    for a in small:
        for b in small:
            for c in small:
                _check_against_numpy([a, b, c])
                checked += 1
    assert checked == 85**2 + 21**3


@settings(max_examples=300, deadline=None)
@given(_compatible_shapes(), st.data())
def test_unknown_dims_are_consistent_with_every_completion(shapes, data):
    """Hiding dims as None never contradicts the known result: each known output dim stays."""
    hidden = [tuple(None if data.draw(st.booleans()) else n for n in s) for s in shapes]
    partial = broadcast_shapes(*hidden)
    full = np.broadcast_shapes(*shapes)
    assert len(partial) == len(full)
    for p, f in zip(partial, full, strict=True):
        assert p is None or p == f


def test_explain_table():
    text = explain_broadcast((2, 1, 5), (5,))
    lines = text.splitlines()
    assert lines[0].split() == ["axis", "-3", "-2", "-1"]
    assert lines[1].split()[-3:] == ["2", "1", "5"]
    assert lines[2].split()[-1] == "5" and lines[2].rstrip().endswith("5")
    assert lines[-1].split() == ["result", "2", "1", "5"]
    # Right alignment: the 5 of the short shape sits under the 5 of the long one.
    assert lines[1].rindex("5") == lines[2].rindex("5")


def test_explain_unknown_and_conflict():
    text = explain_broadcast((None, 3), (4, 1))
    assert text.splitlines()[-1].split() == ["result", "4", "3"]
    assert "?" in text
    bad = explain_broadcast((2, 3), (4,))
    assert "incompatible: aligned axis -1: 3 (#0) vs 4 (#1)" in bad


# -- issue 17: the whole table, character for character (layout written out by hand) ------------

_TABLES = [
    (
        [(3, 1), (None, 4), (4,)],
        "axis         -2 -1\n"
        "#0 (3, 1)     3  1\n"
        "#1 (None, 4)  ?  4\n"
        "#2 (4,)          4\n"
        "------------------\n"
        "result        3  4",
    ),
    (
        [(10, 1), (1, 100)],
        "axis         -2  -1\n"
        "#0 (10, 1)   10   1\n"
        "#1 (1, 100)   1 100\n"
        "-------------------\n"
        "result       10 100",
    ),
    (
        [(2, 3), (4,)],
        "axis      -2 -1\n"
        "#0 (2, 3)  2  3\n"
        "#1 (4,)       4\n"
        "incompatible: aligned axis -1: 3 (#0) vs 4 (#1); neither is 1",
    ),
    ([], "axis  \n------\nresult"),
    ([()], "axis  \n#0 () \n------\nresult"),  # labels padded to the widest, "result"
]


@pytest.mark.parametrize("shapes, table", _TABLES)
def test_explain_table_exactly(shapes, table):
    assert explain_broadcast(*shapes) == table


def test_explain_names_the_position_of_a_bad_shape():
    with pytest.raises(TypeError, match=r"shape #1 must be a tuple of ints or None"):
        explain_broadcast((2,), "x")
