"""Memory: scripted aliasing scenarios against NumPy's mutable views and, if present, PyTorch."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized

from jaxparadigm.tensor import Memory
from jaxparadigm.tensor.memory import Handle
from jaxparadigm.tensor.view import View

# A script is a list of steps; every interpreter runs it and all tensors are compared after every
# step. ("set_", name, source, offset, shape, strides): source is a tensor name or new values.
SCRIPTS = {
    "c2_5_seed_set_": [
        ("tensor", "a", [1, 2, 3]),
        ("view", "b", "a", (-1,)),
        ("set_", "b", [9, 8, 7], 0, None, None),
        ("add_", "b", 1),
    ],
    "c2_5_copy_writes_through": [
        ("tensor", "a", [1, 2, 3]),
        ("view", "b", "a", (-1,)),
        ("copy_", "b", [9, 8, 7]),
    ],
    "views_and_strides": [
        ("tensor", "a", [0.0, 1, 2, 3, 4, 5]),
        ("view", "b", "a", (2, 3)),
        ("as_strided", "c", "a", (3, 2), (1, 3), 0),  # b transposed
        ("add_", "c", 10.0),
        ("setitem_", "b", (slice(None), 1), [7.0, 8.0]),
        ("fill_", "c", -1.0),
        ("copy_", "b", [[1.0], [2.0]]),  # broadcast over the row
        ("setitem_", "c", (2, 0), 5.5),
    ],
    "set_shares_another_storage": [
        ("tensor", "a", [0.0, 1, 2, 3]),
        ("view", "b", "a", (2, 2)),
        ("tensor", "c", [10.0, 11, 12, 13]),
        ("set_", "b", "c", 0, None, None),
        ("add_", "b", 1.0),
        ("add_", "a", 100.0),
        ("set_", "b", "c", 1, (2,), (2,)),
        ("copy_", "b", [-5.0, -6.0]),
        ("view", "d", "c", (2, 2)),
        ("setitem_", "d", (0, 0), 42.0),
    ],
    # Issue 10: an advanced index that repeats a position; the last write wins (NumPy; PyTorch
    # under use_deterministic_algorithms(True), which run_torch turns on).
    "repeated_advanced_index": [
        ("tensor", "a", [float(i) for i in range(16)]),
        ("view", "t", "a", (4, 4)),
        ("setitem_", "t", (np.array([2, 2]), np.array([2, 2])), [5.0, 7.0]),
        ("setitem_", "t", (np.array([2, 1, 2, 1]), np.array([2, 0, 2, 0])), [1.0, 2.0, 3.0, 4.0]),
        ("as_strided", "c", "a", (4, 4), (1, 4), 0),  # t transposed
        ("setitem_", "c", (np.array([0, 3, 0]), slice(1, 3)), [[1.0, 2], [3, 4], [5, 6]]),
        ("setitem_", "t", [1, 1, 1], 0.5),
    ],
    "offset_views": [
        ("tensor", "s", list(range(12))),
        ("as_strided", "t", "s", (2, 3), (3, 1), 2),  # C2.1's seed view
        ("as_strided", "u", "s", (2, 2), (4, 2), 1),
        ("add_", "t", [100, 200, 300]),
        ("setitem_", "u", (slice(None), 1), [-1, -2]),
        ("view", "w", "t", (3, 2)),
        ("fill_", "w", 7),
    ],
}


def run_memory(script):
    mem, handles, states = Memory(), {}, []
    for step in script:
        op, name, *args = step
        if op == "tensor":
            mem, handles[name] = mem.tensor(jnp.asarray(args[0]))
        elif op == "view":
            handles[name] = mem.view(handles[args[0]], *args[1])
        elif op == "as_strided":
            handles[name] = mem.as_strided(handles[args[0]], *args[1:])
        elif op == "set_":
            source, offset, shape, strides = args
            source = handles[source] if isinstance(source, str) else jnp.asarray(source)
            mem, handles[name] = mem.set_(handles[name], source, offset, shape, strides)
        elif op == "setitem_":
            mem = mem.setitem_(handles[name], args[0], jnp.asarray(args[1]))
        else:
            mem = getattr(mem, op)(handles[name], *args)
        states.append({n: np.asarray(mem.read(h)) for n, h in handles.items()})
    return states


def run_numpy(script):
    """NumPy arrays are mutable views over shared buffers: the independent oracle for aliasing."""
    arrays, bases, states = {}, {}, []
    for step in script:
        op, name, *args = step
        if op == "tensor":
            arrays[name] = np.array(args[0], dtype=np.asarray(jnp.asarray(args[0])).dtype)
            bases[name] = arrays[name].reshape(-1)
        elif op == "view":
            arrays[name] = np.reshape(arrays[args[0]], args[1], copy=False)
            bases[name] = bases[args[0]]
        elif op == "as_strided":
            base = bases[args[0]]
            shape, strides, offset = args[1:]
            arrays[name] = _np_strided(base, shape, strides, offset)
            bases[name] = base
        elif op == "set_":
            source, offset, shape, strides = args
            if not isinstance(source, str):
                arrays[name] = np.array(source, dtype=arrays[name].dtype)
                bases[name] = arrays[name].reshape(-1)
            elif shape is None:
                arrays[name], bases[name] = arrays[source], bases[source]
            else:
                arrays[name] = _np_strided(bases[source], shape, strides, offset)
                bases[name] = bases[source]
        elif op == "setitem_":
            arrays[name][args[0]] = args[1]
        elif op == "copy_":
            arrays[name][...] = args[0]
        elif op == "add_":
            arrays[name] += np.asarray(args[0], dtype=arrays[name].dtype)
        elif op == "fill_":
            arrays[name].fill(args[0])
        states.append({n: a.copy() for n, a in arrays.items()})
    return states


def _np_strided(base, shape, strides, offset):
    return np.lib.stride_tricks.as_strided(
        base[offset:], shape, tuple(s * base.itemsize for s in strides), writeable=True
    )


def run_torch(script, torch):
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # repeated index_put_ positions: last write wins
    try:
        return _run_torch(script, torch)
    finally:
        torch.use_deterministic_algorithms(deterministic)


def _run_torch(script, torch):
    tensors, states = {}, []
    for step in script:
        op, name, *args = step
        if op == "tensor":
            tensors[name] = torch.tensor(args[0])
        elif op == "view":
            tensors[name] = tensors[args[0]].view(args[1])
        elif op == "as_strided":
            tensors[name] = torch.as_strided(tensors[args[0]], *args[1:])
        elif op == "set_":
            source, offset, shape, strides = args
            if not isinstance(source, str):
                tensors[name].set_(torch.tensor(source))
            elif shape is None:
                tensors[name].set_(tensors[source])
            else:
                tensors[name].set_(tensors[source], offset, shape, strides)
        elif op == "setitem_":
            tensors[name][args[0]] = torch.as_tensor(args[1])
        elif op == "copy_":
            tensors[name].copy_(torch.as_tensor(args[0]))
        elif op == "add_":
            tensors[name].add_(torch.as_tensor(args[0]))
        else:
            tensors[name].fill_(args[0])
        states.append({n: t.numpy().copy() for n, t in tensors.items()})
    return states


def _assert_same_states(got, expected):
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g.keys() == e.keys(), f"step {i}"
        for name in g:
            np.testing.assert_array_equal(g[name], e[name], err_msg=f"step {i}, tensor {name}")


class ScriptTest(parameterized.TestCase):
    @parameterized.named_parameters(*SCRIPTS.items())
    def test_matches_numpy_views(self, script):
        _assert_same_states(run_memory(script), run_numpy(script))

    @pytest.mark.crosscheck
    @parameterized.named_parameters(*SCRIPTS.items())
    def test_matches_torch(self, script):
        torch = pytest.importorskip("torch")
        _assert_same_states(run_memory(script), run_torch(script, torch))

    def test_c2_5_set_does_not_write_through(self):
        """The article says a == [9,8,7] after b.set_; PyTorch (and this model) keep a."""
        last = run_memory(SCRIPTS["c2_5_seed_set_"])[2]
        np.testing.assert_array_equal(last["a"], [1, 2, 3])
        np.testing.assert_array_equal(last["b"], [9, 8, 7])
        copied = run_memory(SCRIPTS["c2_5_copy_writes_through"])[-1]
        np.testing.assert_array_equal(copied["a"], [9, 8, 7])


class MemoryJitTest(chex.TestCase):
    def setUp(self):
        super().setUp()
        self.mem, self.a = Memory().tensor(jnp.arange(6.0))
        self.b = self.mem.view(self.a, 2, 3)
        self.c = self.mem.as_strided(self.a, (3, 2), (1, 3))

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_inplace_ops_inside_jit(self):
        a, b, c = self.a, self.b, self.c

        def program(mem):
            mem = mem.add_(c, 10.0)
            mem = mem.setitem_(b, (0, slice(None)), jnp.array([7.0, 8.0, 9.0]))
            return mem, mem.read(a), mem.read(c)

        mem, read_a, read_c = self.variant(program)(self.mem)
        np.testing.assert_array_equal(read_a, [7, 8, 9, 13, 14, 15])
        np.testing.assert_array_equal(read_c, [[7, 13], [8, 14], [9, 15]])
        self.assertIsInstance(mem, Memory)
        # The input Memory is unchanged: in-place ops are functional.
        np.testing.assert_array_equal(self.mem.read(a), np.arange(6.0))

    def test_memory_is_a_pytree_carried_by_scan(self):
        b = self.b

        def body(mem, _):
            return mem.add_(b, 1.0), None

        mem, _ = jax.lax.scan(body, self.mem, None, length=5)
        self.assertLen(jax.tree_util.tree_leaves(mem), 1)
        np.testing.assert_array_equal(mem.read(self.a), np.arange(6.0) + 5)

    def test_contiguous_write_is_a_slice_update_not_a_scatter(self):
        row = self.mem.view(self.a, 2, 3)
        first = dataclasses.replace(row, view=row.view.select(0, 1))
        jaxpr = str(jax.make_jaxpr(lambda m: m.copy_(first, 1.0))(self.mem))
        self.assertIn("dynamic_update_slice", jaxpr)
        self.assertNotIn("scatter", jaxpr)


class MemoryErrorsTest(parameterized.TestCase):
    def setUp(self):
        super().setUp()
        self.mem, self.a = Memory().tensor(jnp.arange(6.0))
        self.mem, self.i = self.mem.tensor(jnp.arange(3))

    def test_write_to_overlapping_view(self):
        row = self.mem.view(self.a, 2, 3)
        expanded = dataclasses.replace(row, view=row.view.select(0, 0).view(1, 3).expand(4, 3))
        with self.assertRaisesRegex(ValueError, "more than one element"):
            self.mem.add_(expanded, 1.0)
        with self.assertRaisesRegex(ValueError, "more than one element"):
            self.mem.setitem_(expanded, (slice(None), 0), 1.0)  # the sub-view overlaps
        with self.assertRaisesRegex(ValueError, "advanced index into an overlapping view"):
            self.mem.setitem_(expanded, (np.array([0, 1]), np.array([1, 2])), 1.0)
        # One element of an overlapping view is no overlapping write (PyTorch allows it too).
        mem = self.mem.setitem_(expanded, (0, 1), 5.0)
        np.testing.assert_array_equal(mem.read(expanded)[:, 1], [5.0] * 4)

    def test_errors(self):
        mem, a, i = self.mem, self.a, self.i
        with self.assertRaisesRegex(TypeError, "can't be cast"):
            mem.add_(i, 1.5)
        with self.assertRaisesRegex(TypeError, "must be a Handle"):
            mem.read("a")
        with self.assertRaisesRegex(ValueError, "storage 7"):
            mem.read(Handle(7, a.view, a.uid))
        with self.assertRaisesRegex(ValueError, "cannot be broadcast"):
            mem.copy_(a, jnp.ones(4))
        with self.assertRaisesRegex(ValueError, "scalar"):
            mem.fill_(a, jnp.ones(2))
        with self.assertRaisesRegex(ValueError, "invalid for a view"):
            mem.setitem_(a, 9, 1.0)
        with self.assertRaisesRegex(TypeError, "dtype"):
            mem.set_(a, i)
        with self.assertRaisesRegex(ValueError, "storage index 8"):
            mem.set_(a, a, 4, (3,), (2,))
        with self.assertRaisesRegex(ValueError, "needs shape"):
            mem.set_(a, a, 2)
        with self.assertRaisesRegex(ValueError, "not compatible"):
            mem.view(mem.as_strided(a, (3, 2), (1, 3)), 6)
        with self.assertRaisesRegex(ValueError, "storage index 7"):
            mem.as_strided(a, (2, 2), (3, 2), 2)


class MemoryIdentityTest(parameterized.TestCase):
    """Issue 10: a Handle from another Memory read or wrote that Memory's storage silently."""

    def setUp(self):
        super().setUp()
        self.m1, self.h1 = Memory().tensor(jnp.arange(4.0))
        self.m2, self.h2 = Memory().tensor(jnp.arange(4.0) * 10)

    @parameterized.named_parameters(
        ("read", lambda m, h: m.read(h)),
        ("copy_", lambda m, h: m.copy_(h, 1.0)),
        ("add_", lambda m, h: m.add_(h, 1.0)),
        ("setitem_", lambda m, h: m.setitem_(h, 0, 1.0)),
        ("view", lambda m, h: m.view(h, 2, 2)),
        ("as_strided", lambda m, h: m.as_strided(h, (2,), (2,))),
        ("set_target", lambda m, h: m.set_(h, jnp.zeros(2))),
    )
    def test_handle_from_another_memory_is_refused(self, op):
        with self.assertRaisesRegex(ValueError, "handle from another Memory"):
            op(self.m2, self.h1)
        op(self.m1, self.h1)  # its own Memory accepts it

    def test_set_source_from_another_memory_is_refused(self):
        with self.assertRaisesRegex(ValueError, "source is a handle from another Memory"):
            self.m2.set_(self.h2, self.h1)

    def test_sibling_memories_with_the_same_storage_position(self):
        base, a = Memory().tensor(jnp.zeros(2))
        left, b = base.tensor(jnp.ones(3))
        right, c = base.tensor(jnp.full(3, 9.0))
        self.assertEqual((b.storage, c.storage), (1, 1))
        with self.assertRaisesRegex(ValueError, "another Memory"):
            right.read(b)
        np.testing.assert_array_equal(right.read(a), [0, 0])  # the shared parent storage

    def test_identity_survives_in_place_ops_pytrees_and_jit(self):
        mem = self.m1.add_(self.h1, 1.0)
        mem = jax.tree_util.tree_map(lambda x: x * 2, mem)
        mem = jax.jit(lambda m: m.fill_(self.h1, 3.0))(mem)
        np.testing.assert_array_equal(mem.read(self.h1), [3.0] * 4)
        with self.assertRaisesRegex(ValueError, "another Memory"):
            jax.jit(lambda m: m.read(self.h2))(mem)

    def test_set_with_values_gets_a_new_identity(self):
        mem, b = self.m1.set_(self.h1, jnp.zeros(3))
        self.assertNotEqual(b.uid, self.h1.uid)
        np.testing.assert_array_equal(mem.read(b), [0, 0, 0])
        with self.assertRaisesRegex(ValueError, "storage 1"):
            self.m1.read(b)


class RepeatedAdvancedIndexTest(parameterized.TestCase):
    """Issue 10: ``t[rows, cols] = v`` with a repeated position raised; now the last write wins."""

    def test_issue_reproducer(self):
        mem, t = Memory().tensor(jnp.arange(16.0).reshape(4, 4))
        rows = cols = np.array([2, 2])
        np.testing.assert_array_equal(mem.setitem_(t, (rows, cols), 0.0).read(t)[2, 2], 0.0)
        out = mem.setitem_(t, (rows, cols), jnp.array([5.0, 7.0])).read(t)
        self.assertEqual(float(out[2, 2]), 7.0)
        self.assertEqual(float(jnp.sum(out)), 120.0 - 10.0 + 7.0)  # nothing else changed

    def test_inside_jit_with_traced_values(self):
        mem, t = Memory().tensor(jnp.zeros(5))
        idx = np.array([1, 3, 1, 1, 3])
        out = jax.jit(lambda m, v: m.setitem_(t, idx, v))(mem, jnp.arange(5.0))
        np.testing.assert_array_equal(out.read(t), [0, 3, 0, 4, 0])

    @pytest.mark.crosscheck
    def test_many_repeats_match_deterministic_torch(self):
        torch = pytest.importorskip("torch")
        rng = np.random.default_rng(0)
        rows, cols = rng.integers(0, 3, 20_000), rng.integers(0, 4, 20_000)
        values = np.arange(20_000, dtype=np.float32)
        mem, t = Memory().tensor(jnp.zeros((3, 4)))
        ours = np.asarray(mem.setitem_(t, (rows, cols), values).read(t))
        deterministic = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            ref = torch.zeros(3, 4)
            ref[torch.from_numpy(rows), torch.from_numpy(cols)] = torch.from_numpy(values)
        finally:
            torch.use_deterministic_algorithms(deterministic)
        np.testing.assert_array_equal(ours, ref.numpy())
        last = {}
        for r, c, v in zip(rows, cols, values, strict=True):
            last[r, c] = v
        np.testing.assert_array_equal(ours, [[last[r, c] for c in range(4)] for r in range(3)])


# -- issue 17 --------------------------------------------------------------------------------------


def test_repr_lists_each_storage_dtype_and_size():
    mem, _ = Memory().tensor(np.zeros((2, 3), np.float32))
    mem, _ = mem.tensor(np.arange(4, dtype=np.int32))
    assert repr(mem) == "Memory(float32[6], int32[4])"
    assert repr(Memory()) == "Memory()"


def test_storage_is_the_whole_flat_storage_and_checks_the_handle():
    mem, a = Memory().tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    b = mem.as_strided(a, (2,), (2,), 1)  # elements 1 and 3 of the storage
    np.testing.assert_array_equal(np.asarray(mem.storage(b)), np.arange(6.0))
    other, _ = Memory().tensor(np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="h is a handle from another Memory"):
        other.storage(a)


def test_set_with_shape_and_no_strides_is_row_major():
    """torch: ``b.set_(a.untyped_storage(), 1, (2, 2))`` views a's storage from element 1 with the
    row-major strides (2, 1): [[1, 2], [3, 4]] of [0, 1, 2, 3, 4, 5]."""
    mem, a = Memory().tensor(np.arange(6.0, dtype=np.float32))
    mem, b = mem.tensor(np.zeros(2, np.float32))
    mem, b = mem.set_(b, a, 1, (2, 2))
    assert b.view.strides == (2, 1) and b.view.offset == 1
    np.testing.assert_array_equal(np.asarray(mem.read(b)), [[1.0, 2.0], [3.0, 4.0]])


def _same_size_cases():
    """``(shape, strides, offset)`` of ``b`` before ``set_(b, a, offset, b's shape)``, where
    ``a`` is 12 contiguous elements: a step-2 slice, a transpose, a size-0 step-2 slice."""
    return [((3,), (2,), 0), ((4, 3), (1, 4), 0), ((0,), (2,), 0), ((2,), (3,), 1)]


@pytest.mark.parametrize("shape, strides, offset", _same_size_cases())
def test_set_to_the_same_size_keeps_the_strides(shape, strides, offset):
    """torch (``aten/src/ATen/native/Resize.h``, ``resize_impl_cpu_``): ``set_(source, offset,
    size)`` with ``size`` equal to the tensor's own keeps its strides (resize returns early); a
    new size gets row-major strides. Found by the generated alias programs vs torch in CI:
    ``t[::2]`` of an empty tensor, then ``set_(s, 0, (0,))``, kept stride 2 in torch."""
    mem, a = Memory().tensor(np.arange(12.0, dtype=np.float32))
    mem, b = mem.tensor(np.zeros(12, np.float32))
    b = mem.as_strided(b, shape, strides, 0)
    mem, kept = mem.set_(b, a, offset, shape)
    assert kept.view.strides == strides and kept.view.offset == offset
    want = np.lib.stride_tricks.as_strided(
        np.arange(12.0, dtype=np.float32)[offset:], shape, tuple(4 * s for s in strides)
    )
    np.testing.assert_array_equal(np.asarray(mem.read(kept)), want)
    other = (1,) * len(shape)  # another size: row-major, whatever b's strides
    mem, fresh = mem.set_(b, a, 0, other)
    assert fresh.view.strides == View.contiguous(other).strides


@pytest.mark.crosscheck
@pytest.mark.parametrize("shape, strides, offset", _same_size_cases())
def test_set_to_the_same_size_keeps_the_strides_as_torch(shape, strides, offset):
    torch = pytest.importorskip("torch")
    t = torch.zeros(12).as_strided(shape, strides, 0)
    t.set_(torch.arange(12.0), offset, shape)
    mem, a = Memory().tensor(np.arange(12.0, dtype=np.float32))
    mem, b = mem.tensor(np.zeros(12, np.float32))
    mem, got = mem.set_(mem.as_strided(b, shape, strides, 0), a, offset, shape)
    assert got.view.strides == tuple(t.stride()) and got.view.offset == t.storage_offset()
    np.testing.assert_array_equal(np.asarray(mem.read(got)), t.numpy())


def test_set_checks_the_row_major_layout_and_refuses_kept_strides_past_the_storage():
    """torch's ``set_`` without strides checks the row-major layout against the storage first
    (``setStorage: ... out of bounds``), even where the strides it then keeps would fit; and keeps
    strides that address past the storage (it then reads past its end), which we refuse."""
    mem, a = Memory().tensor(np.arange(10.0, dtype=np.float32))
    mem, b = mem.tensor(np.zeros(12, np.float32))
    narrow = mem.as_strided(b, (3, 2, 3), (0, 1, 0), 2)  # fits 10 elements; row-major would not
    with pytest.raises(ValueError, match=r"addresses storage index 19, but the source storage"):
        mem.set_(narrow, a, 2, (3, 2, 3))
    mem, c = mem.tensor(np.zeros(3, np.float32))
    every_other = mem.as_strided(b, (3,), (2,), 0)
    with pytest.raises(ValueError, match=r"keeps its strides \(2,\) .*torch reads past"):
        mem.set_(every_other, c, 0, (3,))


@pytest.mark.crosscheck
def test_set_bounds_as_torch_and_where_torch_reads_past_the_storage():
    torch = pytest.importorskip("torch")
    narrow = torch.zeros(12).as_strided((3, 2, 3), (0, 1, 0), 2)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 40"):
        narrow.set_(torch.arange(10.0), 2, (3, 2, 3))
    every_other = torch.arange(6.0)[::2]
    every_other.set_(torch.zeros(3), 0, (3,))  # accepted: the third element lies past the storage
    assert every_other.stride() == (2,) and every_other.untyped_storage().nbytes() == 12


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"offset": 1.5, "shape": (2,)},
            TypeError,
            "offset: got 1.5, expected an int",
        ),
        (
            {"shape": (2, "x")},
            TypeError,
            "shape[1]: got 'x', expected an int",
        ),
        (
            {"shape": (2,), "strides": (1.5,)},
            TypeError,
            "strides[0]: got 1.5, expected an int",
        ),
        (
            {"offset": 4, "shape": (3,)},
            ValueError,
            "element (2,) of the view (shape (3,), strides (1,), offset 4) addresses storage "
            "index 6, but the source storage has only 6 elements (valid indices 0..5)",
        ),
        (
            {"offset": 2},
            ValueError,
            "set_ with offset=2 or strides=None needs shape (torch's "
            "set_(source, storage_offset, size, stride))",
        ),
    ],
)
def test_set_errors_name_the_argument(kwargs, error, message):
    mem, a = Memory().tensor(np.arange(6.0, dtype=np.float32))
    with pytest.raises(error) as info:
        mem.set_(a, a, **kwargs)
    assert str(info.value) == message


def test_fill_errors_name_the_op():
    mem, a = Memory().tensor(np.zeros(3, np.float32))
    with pytest.raises(ValueError) as info:
        mem.fill_(a, np.ones(2))
    assert str(info.value) == "fill_ value must be a scalar, got shape (2,)"
    wide = mem.as_strided(a, (2, 2), (0, 1))  # both rows are elements 0 and 1
    # As torch (issue 23: torch.zeros(3).as_strided((2, 2), (0, 1)).fill_(1.0) fills elements 0
    # and 1): one value written to a shared element is well defined, so it is not refused.
    np.testing.assert_array_equal(mem.fill_(wide, 1.0).storage(a), [1.0, 1.0, 0.0])


def test_add_refuses_a_float_into_an_int_storage_naming_the_op():
    mem, a = Memory().tensor(np.arange(6, dtype=np.int32))
    with pytest.raises(TypeError) as info:
        mem.add_(a, 0.5)
    assert str(info.value) == (
        "add_: result type float32 can't be cast to the storage dtype int32 (as torch's in-place "
        "add)"
    )


def _errors(mem, a, e):
    """(call, error, whole message) for ``a`` = tensor([0, 1, 2]) and ``e`` = its rows repeated."""
    overlap = "(shape (2, 3), strides (0, 1))"
    one_place = (
        f"more than one element of the written-to view {overlap} refers to a single storage "
        "element; read() and tensor() a copy first (PyTorch: clone())"
    )
    return [
        # None and Ellipsis keep an index basic: a basic index into an overlapping view is a write
        # through overlapping elements, not an advanced index.
        (lambda: mem.setitem_(e, (None, slice(None)), 5.0), ValueError, "setitem_: " + one_place),
        (lambda: mem.setitem_(e, (Ellipsis, 0), 5.0), ValueError, "setitem_: " + one_place),
        (
            lambda: mem.setitem_(e, np.array([0, 1]), 5.0),
            ValueError,
            f"setitem_: advanced index into an overlapping view {overlap}; read() and tensor() a "
            "copy first (PyTorch: clone(); it deprecates index_put_ on expanded tensors)",
        ),
        (
            lambda: mem.setitem_(a, slice(None), np.ones(4)),
            ValueError,
            "setitem_: values of shape (4,) cannot be broadcast to the written shape (3,)",
        ),
        (
            lambda: mem.copy_(a, np.ones(4)),
            ValueError,
            "copy_: values of shape (4,) cannot be broadcast to the written shape (3,)",
        ),
        (
            lambda: mem.as_strided(a, (2.5,), (1,)),
            TypeError,
            "shape[0]: got 2.5, expected an int",
        ),
        (
            lambda: mem.as_strided(a, (2,), (1.5,)),
            TypeError,
            "strides[0]: got 1.5, expected an int",
        ),
    ]


@pytest.mark.parametrize("case", range(7))
def test_write_and_alias_errors_give_the_whole_message(case):
    mem, a = Memory().tensor(np.arange(3.0, dtype=np.float32))
    call, error, message = _errors(mem, a, mem.as_strided(a, (2, 3), (0, 1)))[case]
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


@pytest.mark.parametrize("wrap", [lambda i: i, lambda i: (i,), lambda i: (i, slice(None))])
def test_traced_index_is_refused_alone_or_in_a_tuple(wrap):
    mem, a = Memory().tensor(np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match=r"^setitem_ index must be static \(ints, slices, numpy"):
        jax.jit(lambda i: mem.setitem_(a, wrap(i), 1.0).storages[0])(0)


def test_new_storages_get_fresh_ids_and_the_ids_must_match():
    a = jnp.zeros(2)
    m1, m2 = Memory((a,)), Memory((a,))
    assert m1.uids[0] >= 1 and m2.uids[0] > m1.uids[0]
    with pytest.raises(ValueError) as info:
        Memory((a,), (1, 2))
    assert str(info.value) == "uids: got 2 ids for 1 storages"


def test_handle_errors_give_the_whole_message():
    mem, a = Memory().tensor(np.zeros(3, np.float32))
    with pytest.raises(TypeError) as info:
        mem.read("a")
    assert str(info.value) == "h must be a Handle, got str"
    other, _ = Memory().tensor(np.zeros(3, np.float32))
    with pytest.raises(ValueError) as info:
        other.read(a)
    assert str(info.value) == (
        f"h is a handle from another Memory: its storage 0 has id {a.uid}, this Memory's storage "
        f"0 has id {other.uids[0]}; use the handles this Memory's tensor()/set_() returned"
    )


def test_add_of_a_wider_float_into_a_half_storage_is_allowed():
    """torch: ``half_tensor += float_tensor`` is an in-place add (same kind); only a kind change
    (float into int) is refused."""
    mem, a = Memory().tensor(np.zeros(3, np.float16))
    np.testing.assert_array_equal(np.asarray(mem.add_(a, np.ones(3, np.float32)).read(a)), 1.0)


def test_tensor_of_a_handle_is_refused_with_the_whole_message():
    mem, a = Memory().tensor(np.zeros(3, np.float32))
    with pytest.raises(TypeError) as info:
        mem.tensor(a)
    assert str(info.value) == "data must be array-like values, got a Handle (use view/read)"


#: (view shape, index, whether the index is refused: a mask must have the shape of the dims it
#: indexes). The empty cases: NumPy skips the check there, PyTorch does not.
_MASKS = [
    ((2, 3), (Ellipsis, None, np.array([True, False, True]), None), False),
    ((2, 3), (np.array([True, False]),), False),
    ((2, 3), (np.array([True, False, True]),), True),
    ((2, 3), np.array([[True, False, True], [False, False, True]]), False),
    ((2, 3), (Ellipsis, [True, False, True]), False),
    ((2, 3), (slice(None), np.array([True, True])), True),
    ((0, 1), (Ellipsis, None, np.array([], bool), None), True),
    ((0, 1), (np.array([], bool),), False),
    ((0, 1), (slice(None), np.array([True])), False),
]


def _setitem_refused(shape, index) -> bool:
    mem, h = Memory().tensor(np.zeros(6, np.float32))
    view = mem.as_strided(h, shape, View.contiguous(shape).strides, 0)
    try:
        mem.setitem_(view, index, np.float32(1.0))
    except ValueError as err:
        assert "invalid for a view of shape" in str(err)
        return True
    return False


@pytest.mark.parametrize("shape, index, refused", _MASKS)
def test_setitem_boolean_masks_must_match_their_dimensions(shape, index, refused):
    """Found by the generated alias programs vs torch: ``t[..., None, mask, None] = v`` with an
    empty mask on a ``(0, 1)`` view, which NumPy lets through for an empty array."""
    assert _setitem_refused(shape, index) is refused
    if 0 not in shape:  # NumPy as the oracle where it checks
        try:
            np.zeros(shape, np.float32)[index] = 1.0
        except IndexError:
            assert refused
        else:
            assert not refused


@pytest.mark.crosscheck
@pytest.mark.parametrize("shape, index, refused", _MASKS)
def test_setitem_boolean_masks_as_torch(shape, index, refused):
    torch = pytest.importorskip("torch")
    parts = index if isinstance(index, tuple) else (index,)
    tindex = tuple(
        torch.from_numpy(np.asarray(p)) if isinstance(p, (list, np.ndarray)) else p for p in parts
    )
    try:
        torch.zeros(shape)[tindex] = 1.0
        torch_refuses = False
    except IndexError:
        torch_refuses = True
    assert torch_refuses is refused is _setitem_refused(shape, index)
