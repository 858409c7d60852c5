"""Edge cases of the VJP/JVP rules against jax as oracle (issue 17: survivors of the random
mutation sample of ``autodiff``, each test named for what a one-line slip would break).

Each case is a corner the main suites did not reach: a low-precision dtype kept through a rule,
an out-of-bounds scatter mode, a variadic ``lax.reduce`` whose reduced axis is odd or empty,
a raw (unclosed) jaxpr, and the names ``Graph.to_dot`` gives its variables.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import grad, jvp, trace, vjp
from jaxparadigm.autodiff.graph import count_equations

RNG = np.random.default_rng(17)


def _rand(*shape, dtype=jnp.float32):
    return jnp.asarray(RNG.standard_normal(shape), dtype)


# ------------------------------------------------------------------------------ dtypes kept


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_pow_with_integer_exponent_keeps_the_base_dtype_in_forward_mode(dtype):
    """``x ** n`` (integer n): the tangent ``t * n * x**(n-1)`` is computed in x's dtype, as jax's,
    bit for bit. The bases are ones where computing in float32 and rounding once to bfloat16
    differs from jax's bfloat16 arithmetic (0.54296875**4 * 5: 0.435546875 vs 0.43359375)."""
    x = jnp.asarray([0.5, -1.5, 2.0, 0.54296875, 2.78125, 2.015625, 0.5703125], dtype)
    n = jnp.asarray([2, 0, 3, 5, 5, 7, 5], jnp.int32)
    f = lambda x: lax.pow(x, n)
    ours = jvp(f, (x,), (jnp.ones_like(x),))
    theirs = jax.jvp(f, (x,), (jnp.ones_like(x),))
    assert ours[1].dtype == theirs[1].dtype == dtype
    np.testing.assert_array_equal(np.float32(ours[1]), np.float32(theirs[1]))


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_sort_gradient_keeps_the_operand_dtype(dtype):
    x = jnp.asarray([3.0, -1.0, 2.0, 0.5], dtype)
    w = jnp.asarray([1.0, 2.0, 3.0, 4.0], dtype)
    f = lambda x: jnp.sum(jnp.sort(x) * w)
    ours, theirs = grad(f)(x), jax.grad(f)(x)
    assert ours.dtype == theirs.dtype == dtype
    np.testing.assert_array_equal(np.float32(ours), np.float32(theirs))


# ----------------------------------------------------------------- scatter modes out of bounds


def _extremal(op, mode, idx):
    weights = jnp.arange(1.0, 5.0)

    def f(x, u):
        at = x.at[idx]
        out = at.max(u, mode=mode) if op == "max" else at.min(u, mode=mode)
        return jnp.sum(out * weights)

    return f


X4 = jnp.asarray([0.5, 2.0, -1.0, 0.25])
U3 = jnp.asarray([3.0, 1.0, -2.0])


@pytest.mark.parametrize("mode", ["drop", "promise_in_bounds"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_extremal_scatter_gradient_follows_the_mode(mode, op):
    """scatter-max/min gradients equal jax's: 'drop' with index 7 of a length-4 operand (the
    update is dropped), 'promise_in_bounds' with in-range indices."""
    idx = jnp.asarray([1, 7, 2]) if mode == "drop" else jnp.asarray([1, 3, 2])
    f = _extremal(op, mode, idx)
    ours = grad(f, argnums=(0, 1))(X4, U3)
    theirs = jax.grad(f, argnums=(0, 1))(X4, U3)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("op", ["max", "min"])
def test_extremal_scatter_gradient_with_clipped_indices_is_the_numerical_one(op):
    """mode='clip' sends index 7 to 3. The function is piecewise linear here, so a central
    difference is exact; our gradient equals it. jax 0.10's own gradient is not an oracle here:
    for scatter-max it credits x[3] (which the clipped update replaced) and gives u[1] an inf."""
    f = _extremal(op, "clip", jnp.asarray([1, 7, 2]))
    ours = grad(f, argnums=(0, 1))(X4, U3)
    h = 1e-2

    def shifted(k, i, d):  # f with argument k's entry i moved by d
        args = [X4, U3]
        args[k] = args[k].at[i].add(d)
        return f(*args)

    for k, got in enumerate(ours):
        numeric = [(shifted(k, i, h) - shifted(k, i, -h)) / (2 * h) for i in range(got.shape[0])]
        np.testing.assert_allclose(got, numeric, rtol=1e-3, atol=1e-3)


# ------------------------------------------------------------------------- variadic lax.reduce


def _reduce_one(x, axes):
    # Not a monoid jax recognises, so this binds the generic reduce primitive.
    return lax.reduce(x, 0.0, lambda a, b: a + b * b, axes)


def _reduce_two(x, y, axes):
    def reducer(a, b):
        (ax, ay), (bx, by) = a, b
        take = ax >= bx
        return jnp.where(take, ax, bx), jnp.where(take, ay, by)

    return lax.reduce((x, y), (-jnp.inf, 0.0), reducer, axes)


@pytest.mark.parametrize("shape, axes", [((5, 3), (0,)), ((3, 7), (1,)), ((2, 3, 5), (0, 2))])
def test_generic_reduce_jvp_of_one_operand_with_odd_axes(shape, axes):
    """jax's tree reduction pads odd halves with the init value: one operand, odd lengths."""
    x, t = _rand(*shape), _rand(*shape)
    ours = jvp(lambda x: _reduce_one(x, axes), (x,), (t,))
    theirs = jax.jvp(lambda x: _reduce_one(x, axes), (x,), (t,))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_generic_reduce_jvp_of_two_operands_with_an_odd_axis():
    x, y = _rand(5, 3), _rand(5, 3)
    tx, ty = _rand(5, 3), _rand(5, 3)
    f = lambda x, y: _reduce_two(x, y, (0,))
    ours = jvp(f, (x, y), (tx, ty))
    theirs = jax.jvp(f, (x, y), (tx, ty))
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_generic_reduce_jvp_over_an_empty_axis_is_the_init_value_with_the_kept_shape():
    x = jnp.zeros((0, 3), jnp.float32)
    primal, tangent = jvp(lambda x: _reduce_one(x, (0,)), (x,), (x,))
    ref_primal, ref_tangent = jax.jvp(lambda x: _reduce_one(x, (0,)), (x,), (x,))
    assert primal.shape == tangent.shape == ref_primal.shape == (3,)
    np.testing.assert_array_equal(primal, ref_primal)
    np.testing.assert_array_equal(tangent, ref_tangent)


# ---------------------------------------------------------------------------- graph utilities


def test_count_equations_accepts_an_unclosed_jaxpr():
    closed = jax.make_jaxpr(lambda x: jax.nn.relu(x) + 1.0)(jnp.ones(2))
    assert count_equations(closed.jaxpr) == count_equations(closed) == 4


def test_to_dot_names_every_variable_distinctly():
    """Inputs are named v0, v1 in order and each edge carries its variable's name."""
    dot = trace(lambda x, y: jnp.sum(x * y), jnp.ones(2), jnp.ones(2)).to_dot()
    assert 'in0 [shape=box, label="input v0: float32[2]"]' in dot
    assert 'in1 [shape=box, label="input v1: float32[2]"]' in dot
    assert 'in0 -> n0 [label="v0"]' in dot and 'in1 -> n0 [label="v1"]' in dot
    assert 'n0 -> n1 [label="v2"]' in dot and 'n1 -> out0 [label="v3"]' in dot


def test_backward_returns_no_cotangent_for_inputs_left_out_of_wrt():
    """``wrt`` picks the inputs differentiated: y is float and on the path, but not in ``wrt``,
    so its cotangent is None (not computed and handed back anyway)."""
    x, y = jnp.asarray([1.0, 2.0]), jnp.asarray([3.0, 4.0])
    graph = trace(lambda x, y: jnp.sum(x * y), x, y)
    env = graph.forward([x, y], [True, False])
    ct_x, ct_y = graph.backward(env, [jnp.float32(1.0)], [True, False])
    np.testing.assert_array_equal(ct_x, y)
    assert ct_y is None
    both = graph.backward(graph.forward([x, y]), [jnp.float32(1.0)], [True, True])
    np.testing.assert_array_equal(both[1], x)


def test_active_vars_refuses_a_wrt_mask_of_the_wrong_length():
    graph = trace(lambda x, y: x * y, jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match="zip"):
        graph.active_vars([True])
    assert len(graph.active_vars([True, False])) == 2  # x and x * y


# --------------------------------------------------------------------------- custom_jvp rules


@jax.custom_jvp
def _scaled_and_counts(x, n):
    return x * n, n


@_scaled_and_counts.defjvp
def _scaled_and_counts_jvp(primals, tangents):
    (x, n), (tx, tn) = primals, tangents
    return _scaled_and_counts(x, n), (tx * n, tn)


def test_custom_jvp_rule_gets_float0_tangents_shaped_like_integer_arguments():
    """Without symbolic zeros a custom rule receives a float0 tangent for each integer argument,
    shaped like it (jax's convention); a rule that passes it through returns it as the integer
    output's tangent."""
    x = jnp.asarray([1.0, 2.0, 3.0])
    n = jnp.asarray([2, 3, 4], jnp.int32)
    g = lambda x: _scaled_and_counts(x, n)
    (_, _), (t_scaled, t_counts) = jvp(g, (x,), (jnp.ones(3),))
    (_, _), (ref_scaled, ref_counts) = jax.jvp(g, (x,), (jnp.ones(3),))
    np.testing.assert_array_equal(t_scaled, ref_scaled)
    assert np.shape(t_counts) == np.shape(ref_counts) == (3,)
    assert np.asarray(t_counts).dtype == jax.dtypes.float0


@pytest.mark.parametrize("op", ["max", "min"])
def test_extremal_scatter_jvp_with_a_tangent_for_the_operand_only(op):
    """Only x has a tangent (the updates are constants): the output tangent is x's tangent where
    x survived, zero where an update won, as jax's."""
    idx = jnp.asarray([1, 3])
    u = jnp.asarray([3.0, -5.0])
    f = lambda x: x.at[idx].max(u) if op == "max" else x.at[idx].min(u)
    x, t = jnp.asarray([0.5, 2.0, -1.0, 0.25]), jnp.asarray([1.0, 2.0, 3.0, 4.0])
    ours, theirs = jvp(f, (x,), (t,)), jax.jvp(f, (x,), (t,))
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert np.any(np.asarray(ours[1]) != 0)


@pytest.mark.parametrize("reduce", [jnp.max, jnp.min])
def test_reduce_max_min_jvp_keeps_bfloat16(reduce):
    """Ties share the tangent: ``sum(t * hit) / sum(hit)`` summed in bfloat16 as jax does. Row 2
    ties four ways with tangents 1, 2**-8, 2**-8, 2**-8: bfloat16 sums give 1/4, a float32
    accumulation (jnp.sum's) 1.01171875/4, which rounds to 0.253906."""
    x = jnp.asarray([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 0.5, 2.0], [1.0, 1.0, 1.0, 1.0]])
    x = (x if reduce is jnp.max else -x).astype(jnp.bfloat16)
    t = jnp.asarray(
        [[0.5, 1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 3.0], [1.0, 2**-8, 2**-8, 2**-8]], jnp.bfloat16
    )
    f = lambda x: reduce(x, axis=1)
    ours, theirs = jvp(f, (x,), (t,)), jax.jvp(f, (x,), (t,))
    assert ours[1].dtype == theirs[1].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.float32(ours[1]), np.float32(theirs[1]))


def test_register_vjp_overwrite_replaces_an_existing_rule():
    from jaxparadigm.autodiff import get_vjp, register_vjp
    from jaxparadigm.autodiff.registry import unregister_vjp

    first = lambda ct, x, **p: (ct,)
    second = lambda ct, x, **p: (2 * ct,)
    register_vjp("zz_overwritten_primitive")(first)
    try:
        with pytest.raises(ValueError, match="overwrite=True"):
            register_vjp("zz_overwritten_primitive")(second)
        assert get_vjp("zz_overwritten_primitive") is first
        register_vjp("zz_overwritten_primitive", overwrite=True)(second)
        assert get_vjp("zz_overwritten_primitive") is second
    finally:
        unregister_vjp("zz_overwritten_primitive")


# ------------------------------------------------------------------------------ convolutions


def _conv(lhs, rhs, fgc=1, bgc=1):
    return lax.conv_general_dilated(
        lhs,
        rhs,
        window_strides=(1,),
        padding="VALID",
        dimension_numbers=("NCH", "OIH", "NCH"),
        feature_group_count=fgc,
        batch_group_count=bgc,
    )


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape, fgc, bgc",
    [
        ((2, 4, 6), (6, 2, 3), 2, 1),  # two feature groups
        ((4, 3, 6), (4, 3, 3), 1, 2),  # two batch groups
        ((6, 2, 5), (6, 2, 2), 1, 3),  # three batch groups
    ],
)
def test_grouped_convolution_gradients_equal_jax(lhs_shape, rhs_shape, fgc, bgc):
    lhs, rhs = _rand(*lhs_shape), _rand(*rhs_shape)
    w = _rand(*jax.eval_shape(lambda a, b: _conv(a, b, fgc, bgc), lhs, rhs).shape)
    f = lambda lhs, rhs: jnp.sum(_conv(lhs, rhs, fgc, bgc) * w)
    ours = grad(f, argnums=(0, 1))(lhs, rhs)
    theirs = jax.grad(f, argnums=(0, 1))(lhs, rhs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_convolution_gradients_keep_bfloat16():
    lhs, rhs = _rand(1, 2, 5, dtype=jnp.bfloat16), _rand(3, 2, 2, dtype=jnp.bfloat16)
    f = lambda lhs, rhs: jnp.sum(_conv(lhs, rhs).astype(jnp.float32))
    ours = grad(f, argnums=(0, 1))(lhs, rhs)
    theirs = jax.grad(f, argnums=(0, 1))(lhs, rhs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype == jnp.bfloat16
        np.testing.assert_allclose(np.float32(a), np.float32(b), rtol=1e-2)


def test_convolution_with_an_empty_output_has_zero_kernel_gradient_of_its_dtype():
    """A batch of zero examples: the kernel's cotangent is zeros of the kernel's dtype."""
    lhs, rhs = jnp.zeros((0, 2, 5), jnp.bfloat16), _rand(3, 2, 2, dtype=jnp.bfloat16)
    f = lambda rhs: jnp.sum(_conv(lhs, rhs).astype(jnp.float32))
    ours, theirs = grad(f)(rhs), jax.grad(f)(rhs)
    assert ours.dtype == theirs.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.float32(ours), np.float32(theirs))


# ------------------------------------------------------------------------------ control flow


def test_scan_with_an_unused_bfloat16_output_keeps_bfloat16_cotangents():
    """The stacked outputs ``ys`` are unused: their (absent) cotangent becomes zeros of their own
    dtype inside the scan's backward pass, so the carry's gradient stays bfloat16."""

    def f(x):
        def body(c, _):
            return c * x, c * 2

        carry, _ = lax.scan(body, jnp.ones_like(x), None, length=3)
        return jnp.sum(carry.astype(jnp.float32))

    x = jnp.asarray([0.5, 1.5], jnp.bfloat16)
    ours, theirs = grad(f)(x), jax.grad(f)(x)
    assert ours.dtype == theirs.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.float32(ours), np.float32(theirs))


# ------------------------------------------------------------------------------ vjp boundaries


def test_vjp_of_complex_primals_equals_jax():
    """Complex primals were refused until issue 36; now the pullback is jax's (cotangent conjugate
    convention included), output and cotangent dtypes kept."""
    z = jnp.asarray([1.0 + 2.0j, -0.5 + 0.25j], jnp.complex64)
    ct = jnp.asarray([0.5 - 1.0j, 2.0 + 0.0j], jnp.complex64)
    out, pull = vjp(jnp.sin, z)
    ref_out, ref_pull = jax.vjp(jnp.sin, z)
    np.testing.assert_allclose(out, ref_out, rtol=1e-6)
    (got,), (want,) = pull(ct), ref_pull(ct)
    assert got.dtype == want.dtype == jnp.complex64
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_vjp_keeps_residuals_only_for_nodes_on_the_differentiated_path():
    """Two jitted calls: one reads the float input x (differentiated), one only the integer n.
    The saved forward environment holds the residuals of the first alone."""
    from jaxparadigm.autodiff.graph import Node

    from_n = jax.jit(lambda n: jnp.sin(n.astype(jnp.float32)))
    from_x = jax.jit(jnp.cos)
    f = lambda x, n: jnp.sum(x * from_n(n) + from_x(x))
    x, n = jnp.asarray([0.5, 1.0]), jnp.asarray([1, 2], jnp.int32)
    out, vjp_fn = vjp(f, x, n)
    saved = vjp_fn.args[0]
    kept = [k for k in saved.env if isinstance(k, Node)]
    assert [node.name for node in kept] == ["jit"]
    (gx, gn) = vjp_fn(jnp.float32(1.0))
    np.testing.assert_allclose(gx, jax.grad(f)(x, n), rtol=1e-6)
    assert gn.dtype == jax.dtypes.float0


def test_vjp_casts_a_python_float_cotangent_to_a_strong_array_of_the_outputs_dtype():
    """A Python float cotangent of a float32 output is cast to a float32 array that is not weakly
    typed, so even the identity's gradient is a float32 array. (jax's vjp hands the Python float
    itself back for the identity: a deliberate difference, pinned here.)"""
    x = jnp.float32(2.0)
    for f in (lambda x: x, lambda x: x * 3.0):
        (g,) = vjp(f, x)[1](1.0)
        assert isinstance(g, jax.Array) and g.dtype == jnp.float32 and not g.weak_type
    (g,) = vjp(lambda x: x, x)[1](1.0)
    assert float(g) == 1.0
    assert isinstance(jax.vjp(lambda x: x, x)[1](1.0)[0], float)


def test_symbolic_zero_tangents_are_instantiated_in_the_primals_dtype():
    """A closed-over bfloat16 constant has a symbolic zero tangent; concatenating it with x
    instantiates zeros of bfloat16, so the output tangent stays bfloat16."""
    c = jnp.asarray([2.0, 3.0], jnp.bfloat16)
    f = lambda x: lax.concatenate([x, c], 0)
    x = jnp.asarray([1.0], jnp.bfloat16)
    ours = jvp(f, (x,), (jnp.ones_like(x),))
    theirs = jax.jvp(f, (x,), (jnp.ones_like(x),))
    assert ours[1].dtype == theirs[1].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.float32(ours[1]), np.float32(theirs[1]))
