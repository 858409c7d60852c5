"""Adam / AdamW: bitwise against optax, moment storage dtypes, torch-style Adam (C4.2)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.optim import (
    ScaleByAdamState,
    adam,
    adam_state_report,
    adam_torch_style,
    adamw,
    scale_by_adam,
)


def _tree(rng, scale=1.0):
    return {
        "dense": {
            "w": jnp.asarray(scale * rng.normal(size=(5, 3)), jnp.float32),
            "b": jnp.asarray(scale * rng.normal(size=(3,)), jnp.float32),
        },
        "emb": [jnp.asarray(scale * rng.normal(size=(4, 2)), jnp.float32)],
        "scalar": jnp.asarray(scale * rng.normal(), jnp.float32),
    }


def _trajectory(tx, update, steps, seed=0, grad_scale=1.0):
    rng = np.random.default_rng(seed)
    params = _tree(rng)
    state = tx.init(params)
    for _ in range(steps):
        grads = _tree(rng, grad_scale)
        updates, state = update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, state


BUILDERS = (
    ("adam", lambda m: m.adam(3e-3)),
    ("adam_b_eps_root", lambda m: m.adam(1e-2, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-9)),
    ("adamw", lambda m: m.adamw(3e-3, weight_decay=0.1)),
    (
        "adamw_mask",
        lambda m: m.adamw(
            1e-2,
            weight_decay=0.3,
            mask={"dense": {"w": True, "b": False}, "emb": [True], "scalar": False},
        ),
    ),
    ("adam_schedule", lambda m: m.adam(optax.linear_schedule(1e-2, 1e-3, 50))),
)


def _scanned_trajectory(tx, steps=100, seed=0):
    """100 steps as one ``lax.scan`` over pre-drawn gradients (one compilation)."""
    rng = np.random.default_rng(seed)
    params = _tree(rng)
    grads = jax.tree.map(lambda *xs: jnp.stack(xs), *[_tree(rng) for _ in range(steps)])

    def run(params, grads):
        def body(carry, g):
            params, state = carry
            updates, state = tx.update(g, state, params)
            return (optax.apply_updates(params, updates), state), None

        return jax.lax.scan(body, (params, tx.init(params)), grads)[0]

    return run, params, grads


class AdamBitwiseTest(chex.TestCase, parameterized.TestCase):
    # The scanned run is compiled either way, so only the jit variant is meaningful here;
    # eager (op-by-op) execution is covered by the test after this one.
    @chex.variants(with_jit=True)
    @parameterized.named_parameters(*BUILDERS)
    def test_100_steps_bitwise_equal_to_optax(self, build):
        import jaxparadigm.optim as ours_mod

        run1, params, grads = _scanned_trajectory(build(ours_mod))
        run2, _, _ = _scanned_trajectory(build(optax))
        p1, s1 = self.variant(run1)(params, grads)
        p2, s2 = self.variant(run2)(params, grads)
        chex.assert_trees_all_equal(p1, p2)
        chex.assert_trees_all_equal(s1[0].mu, s2[0].mu)
        chex.assert_trees_all_equal(s1[0].nu, s2[0].nu)
        self.assertEqual(int(s1[0].count), 100)

    @parameterized.named_parameters(BUILDERS[3])
    def test_100_eager_steps_bitwise_equal_to_optax(self, build):
        import jaxparadigm.optim as ours_mod

        p1, s1 = _trajectory(build(ours_mod), build(ours_mod).update, 100)
        p2, s2 = _trajectory(build(optax), build(optax).update, 100)
        chex.assert_trees_all_equal(p1, p2)
        chex.assert_trees_all_equal(s1[0].mu, s2[0].mu)
        chex.assert_trees_all_equal(s1[0].nu, s2[0].nu)


COMPLEX_MU_BUILDERS = (
    ("adam", lambda m: m.adam(1e-2, mu_dtype="complex64")),
    ("adamw", lambda m: m.adamw(1e-2, mu_dtype="complex64", weight_decay=0.1)),
    ("nadam", lambda m: m.adam(1e-2, mu_dtype="complex64", nesterov=True)),
)


class ComplexMuForRealParamsTest(chex.TestCase, parameterized.TestCase):
    """``mu_dtype="complex64"`` on real params, bitwise against optax (issue 34).

    optax's first moment ``(1 - b1) g + b1 m`` is complex there, and so are its bias correction
    and ``m_hat / (sqrt(v_hat) + eps)``; computing them on the real part alone rounded
    differently (up to 640 ulp after 10 steps, every seed). Gradients span five decades.
    """

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*COMPLEX_MU_BUILDERS)
    def test_trajectory_bitwise_equal_to_optax(self, build):
        import jaxparadigm.optim as ours_mod

        key = jax.random.PRNGKey(3)
        params = jax.random.normal(key, (64,))
        keys = jax.random.split(key, 10)
        scales = 10.0 ** jax.random.uniform(key, (10, 64), minval=-4.0, maxval=1.0)
        grads = jax.vmap(lambda k: jax.random.normal(k, (64,)))(keys) * scales

        def run(tx):
            state = tx.init(params)
            p = params
            for g in grads:
                updates, state = self.variant(tx.update)(g, state, p)
                p = optax.apply_updates(p, updates)
            return p, state

        p1, s1 = run(build(ours_mod))
        p2, s2 = run(build(optax))
        self.assertEqual(p1.dtype, jnp.float32)
        self.assertEqual(s1[0].mu.dtype, jnp.complex64)
        chex.assert_trees_all_equal(p1, p2)
        chex.assert_trees_all_equal(s1[0].mu, s2[0].mu)
        chex.assert_trees_all_equal(s1[0].nu, s2[0].nu)


class MomentDtypeTest(chex.TestCase, parameterized.TestCase):
    @parameterized.product(
        mu_dtype=[None, "float32", "bfloat16", "float16"],
        nu_dtype=[None, "bfloat16", jnp.float16],
    )
    def test_storage_dtypes_are_independent(self, mu_dtype, nu_dtype):
        rng = np.random.default_rng(1)
        params = _tree(rng)
        tx = scale_by_adam(mu_dtype=mu_dtype, nu_dtype=nu_dtype)
        state = tx.init(params)
        updates, new_state = tx.update(_tree(rng), state)
        want = lambda d: jax.tree.map(lambda p: jnp.zeros_like(p, dtype=d), params)
        chex.assert_trees_all_equal_dtypes(new_state.mu, want(mu_dtype))
        chex.assert_trees_all_equal_dtypes(new_state.nu, want(nu_dtype))
        chex.assert_trees_all_equal_shapes(new_state.mu, params)
        chex.assert_trees_all_equal_dtypes(updates, params)  # updates keep the grads' dtype
        chex.assert_trees_all_equal_shapes_and_dtypes(new_state, state)

    @parameterized.parameters("bfloat16", "float16")
    def test_low_precision_storage_tracks_float32(self, dtype):
        ref, _ = _trajectory(adam(1e-2), jax.jit(adam(1e-2).update), 30)
        tx = adam(1e-2, mu_dtype=dtype, nu_dtype=dtype)
        low, state = _trajectory(tx, jax.jit(tx.update), 30)
        chex.assert_trees_all_close(low, ref, atol=2e-3)
        self.assertEqual(jax.tree.leaves(state[0].nu)[0].dtype, jnp.dtype(dtype))

    def test_bias_correction_in_float32(self):
        # Moments are updated and bias-corrected in float32 before being stored in bfloat16, so
        # the first update equals the float32 one exactly. (In bfloat16, 1 - 0.999**1 would be
        # 1 - 0.99609375: a bias correction four times too large.)
        params = {"x": jnp.zeros((4,), jnp.float32)}
        grads = {"x": jnp.asarray([1.0, 1e-3, -2.0, 3e-5], jnp.float32)}
        low = scale_by_adam(mu_dtype=jnp.bfloat16, nu_dtype=jnp.bfloat16)
        ref = scale_by_adam()
        chex.assert_trees_all_equal(
            low.update(grads, low.init(params))[0], ref.update(grads, ref.init(params))[0]
        )

    def test_state_report_counts_zero_entries(self):
        # The claim's reading of these figures (zero nu = underflow) is tested in
        # tests/claims/test_adam_moments.py; here the report's general figures.
        params = {"w": jnp.zeros((1000,), jnp.float32)}
        grads = {"w": jnp.asarray(np.linspace(1e-5, 1e-3, 1000), jnp.float32)}
        report = {}
        for dtype in ("float32", "bfloat16", "float16"):
            tx = scale_by_adam(nu_dtype=dtype)
            _, state = tx.update(grads, tx.init(params))
            report[dtype] = adam_state_report((state, optax.EmptyState()))
        # (1 - 0.999) * g^2 ranges over 1e-13 .. 1e-9: below float16's smallest subnormal (6e-8).
        self.assertEqual(report["float16"]["nu"]["zero_fraction"], 1.0)
        self.assertEqual(report["bfloat16"]["nu"]["zero_fraction"], 0.0)
        self.assertEqual(report["float32"]["nu"]["zero_fraction"], 0.0)
        self.assertEqual(report["float16"]["nu"]["bytes"], 2000)
        self.assertEqual(report["float32"]["nu"]["bytes"], 4000)
        self.assertEqual(report["float16"]["mu"]["dtype"], "float32")
        self.assertEqual(report["float16"]["nu"]["dtype"], "float16")

    def test_state_report_figures_of_a_hand_built_state(self):
        """Every field on a state whose figures are known: mixed dtypes, None leaves, a dict."""
        state = ScaleByAdamState(
            count=jnp.zeros([], jnp.int32),
            mu={"a": jnp.asarray([0.0, 1.0, 0.0], jnp.float32), "b": None},
            nu={"a": jnp.asarray([0.0, 2.0, 3.0], jnp.bfloat16), "b": jnp.zeros((2, 3))},
        )
        report = adam_state_report({"opt": [state]})
        self.assertEqual(
            report["mu"], {"dtype": "float32", "bytes": 12, "entries": 3, "zero_fraction": 2 / 3}
        )
        self.assertEqual(
            report["nu"],
            {"dtype": "bfloat16,float32", "bytes": 30, "entries": 9, "zero_fraction": 7 / 9},
        )
        empty = ScaleByAdamState(jnp.zeros([], jnp.int32), {"b": None}, {"b": None})
        self.assertEqual(adam_state_report(empty)["mu"]["zero_fraction"], 0.0)

    def test_state_report_needs_one_adam_state(self):
        with self.assertRaisesRegex(ValueError, "found 0"):
            adam_state_report(optax.EmptyState())


class AdamValidationTest(parameterized.TestCase):
    """What is still refused: what optax cannot take either (issue 23). Values optax computes
    with (b1 = 1, eps = 0, negative eps_root, float64/int mu_dtype, NaN rates...) are accepted
    and compared step by step with optax in ``test_optax_dropin_values.py``."""

    @parameterized.parameters(
        (dict(learning_rate="fast"), TypeError, "learning_rate='fast'"),
        (dict(learning_rate=1e-3, b1="0.9"), TypeError, "b1='0.9'"),
        (dict(learning_rate=1e-3, eps=None), TypeError, "eps=None"),
        (dict(learning_rate=1e-3, mu_dtype="bogus"), ValueError, "mu_dtype='bogus'"),
        (
            dict(learning_rate=1e-3, nu_dtype="float8_e4m3fn"),
            ValueError,
            "nu_dtype='float8_e4m3fn'",
        ),
        (dict(learning_rate=1e-3, mu_dtype="int4"), ValueError, "mu_dtype='int4'"),
    )
    def test_bad_hyperparameters(self, kwargs, error, message):
        with self.assertRaisesRegex(error, message):
            adam(**kwargs)

    def test_optax_fails_on_what_we_refuse(self):
        # The refusals above are optax's own failures, moved to construction with a clear message.
        params = {"w": jnp.ones(2)}

        def step(**kw):
            tx = optax.adam(1e-3, **kw)
            return tx.update(params, tx.init(params))

        with self.assertRaises(TypeError):  # 1 - '0.9'
            step(b1="0.9")
        with self.assertRaises(TypeError):  # data type 'bogus' not understood
            step(mu_dtype="bogus")
        with self.assertRaisesRegex(ValueError, "no available implicit dtype promotion"):
            step(mu_dtype=jnp.float8_e4m3fn)

    def test_integer_nu_dtype_warns_and_truncates_as_a_cast(self):
        # optax has no nu_dtype: the store is the same cast as mu_dtype's (optax's tree.cast).
        params = {"w": jnp.asarray([0.0, 0.0])}
        grads = {"w": jnp.asarray([30.0, 3.0])}
        with self.assertWarnsRegex(UserWarning, "^nu_dtype='int8': accepted .* truncates"):
            tx = scale_by_adam(nu_dtype="int8")
        _, state = tx.update(grads, tx.init(params))
        self.assertEqual(state.nu["w"].dtype, jnp.int8)
        np.testing.assert_array_equal(state.nu["w"], [0, 0])  # 0.001 * 900 = 0.9 -> 0

    def test_adamw_and_torch_style_validate(self):
        with self.assertWarnsRegex(UserWarning, "^weight_decay=-0.1: accepted"):
            adamw(1e-3, weight_decay=-0.1)  # optax.adamw takes it: the weights grow
        with self.assertRaisesRegex(ValueError, r"^b2: got 1\.5, expected a number in \[0, 1\)$"):
            adam_torch_style(1e-3, b2=1.5)  # torch.optim.Adam refuses it
        with self.assertRaisesRegex(TypeError, "weight_decay='0.1'"):
            adamw(1e-3, weight_decay="0.1")


@settings(max_examples=40, deadline=None)
@given(
    shapes=st.lists(
        st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple), min_size=1, max_size=4
    )
)
def test_state_mirrors_param_shapes(shapes):
    # Shape logic only: traced abstractly with eval_shape (no compilation per example).
    params = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    tx = scale_by_adam(nu_dtype="bfloat16")
    state = jax.eval_shape(tx.init, params)
    assert isinstance(state, ScaleByAdamState)
    updates, state = jax.eval_shape(tx.update, params, state)
    assert all(leaf.dtype == jnp.bfloat16 for leaf in jax.tree.leaves(state.nu))
    chex.assert_trees_all_equal_shapes(updates, params)
    chex.assert_trees_all_equal_shapes(state.mu, params)
    chex.assert_trees_all_equal_shapes(state.nu, params)


def _numpy_torch_adam(params, grads_seq, lr, b1, b2, eps, wd):
    """Independent float64 reference of torch.optim.Adam's single-tensor update."""
    p = np.asarray(params, np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads_seq, start=1):
        g = np.asarray(g, np.float64) + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v) / np.sqrt(1 - b2**t) + eps
        p = p - (lr / (1 - b1**t)) * m / denom
    return p


def _torch_style_run(tx, params, grads_seq):
    state = tx.init(params)
    update = jax.jit(tx.update)
    for g in grads_seq:
        u, state = update(g, state, params)
        params = optax.apply_updates(params, u)
    return params


@pytest.mark.parametrize("wd", [0.0, 0.05])
def test_adam_torch_style_matches_numpy_formula(wd):
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=(6,)).astype(np.float32)
    grads = [rng.normal(size=(6,)).astype(np.float32) * 1e-3 for _ in range(30)]
    ours = _torch_style_run(
        adam_torch_style(1e-2, eps=1e-8, weight_decay=wd), jnp.asarray(p0), grads
    )
    ref = _numpy_torch_adam(p0, grads, 1e-2, 0.9, 0.999, 1e-8, wd)
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.crosscheck
@pytest.mark.parametrize("wd", [0.0, 0.05])
def test_adam_torch_style_matches_torch(wd):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    p0 = rng.normal(size=(5, 3)).astype(np.float32)
    grads = [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(50)]
    tp = torch.nn.Parameter(torch.tensor(p0))
    opt = torch.optim.Adam([tp], lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd)
    for g in grads:
        tp.grad = torch.tensor(g)
        opt.step()
    ours = _torch_style_run(adam_torch_style(1e-3, weight_decay=wd), jnp.asarray(p0), grads)
    np.testing.assert_allclose(np.asarray(ours), tp.detach().numpy(), rtol=1e-6, atol=1e-6)
    # optax's Adam puts eps inside the bias-corrected denominator: a measurable difference.
    theirs = _torch_style_run(optax.adam(1e-3), jnp.asarray(p0), grads) if wd == 0.0 else None
    if theirs is not None:
        assert np.max(np.abs(np.asarray(theirs) - tp.detach().numpy())) > 0.0


def test_torch_style_bias_correction_does_not_cancel_in_float32():
    """torch takes ``1 - beta**t`` in Python floats. ``1 - float32(0.999)**t`` cancels (0.999
    rounds to 0.99900001: 1.3e-5 relative error at t = 1, 3e-6 in params after 20 steps at lr 0.1,
    found by the eps = 0 torch cross-check); ``-expm1(t log beta)`` keeps float32 precision."""
    from jaxparadigm.optim.adam_torch import _bias_correction

    for beta in (0.9, 0.999, 0.9999, 0.0):
        t = np.arange(1, 40)
        got = np.asarray(_bias_correction(beta, jnp.asarray(t, jnp.float32)))
        np.testing.assert_allclose(got, 1 - np.float64(beta) ** t, rtol=3e-7)


@pytest.mark.crosscheck
def test_adam_torch_style_large_rate_matches_torch_to_the_ulp():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    p0 = np.asarray([0.5, -1.0, 2.0], np.float32)
    grads = [rng.normal(size=3).astype(np.float32) for _ in range(20)]
    tp = torch.nn.Parameter(torch.tensor(p0))
    opt = torch.optim.Adam([tp], lr=0.1)
    for g in grads:
        tp.grad = torch.tensor(g)
        opt.step()
    ours = _torch_style_run(adam_torch_style(0.1), jnp.asarray(p0), grads)
    np.testing.assert_allclose(np.asarray(ours), tp.detach().numpy(), rtol=0, atol=2.5e-7)


if __name__ == "__main__":
    absltest.main()


@pytest.mark.crosscheck
@pytest.mark.parametrize("b1, b2, wd", [(0.0, 0.0, 0.0), (0.9, 0.999, 0.0), (0.3, 0.9, 0.1)])
def test_adam_torch_style_bfloat16_rounds_where_torch_rounds(b1, b2, wd):
    """Regression (shrunk from the generated chains): in bfloat16 ``m + (1-b1)(g - m)`` rounded
    at every op was up to 2.6% off ``exp_avg.lerp_`` (one rounding in float32), with ``b1 = 0``
    at a gradient of -0.0718 after one of 0.64. torch's update is read off a zero bfloat16
    parameter, so it is rounded once, as ours; within one bfloat16 ulp (torch's kernels fuse
    some multiply-adds, and its scalar and vector loops round differently)."""
    torch = pytest.importorskip("torch")
    grads = np.asarray([[0.640625, -0.378906, 2.09375], [-0.0717773, 0.310547, -2.09375]])
    grads = np.concatenate([grads, grads[::-1] * 0.5])
    params = np.asarray([1.5, -0.25, 0.75], np.float32)
    tp = torch.nn.Parameter(torch.zeros(3, dtype=torch.bfloat16))
    opt = torch.optim.Adam([tp], lr=0.3, betas=(b1, b2), eps=1e-8)
    tx = adam_torch_style(0.3, b1, b2, 1e-8, weight_decay=wd)
    p = jnp.asarray(params, jnp.bfloat16)
    state = tx.init(p)
    for g in grads:
        g = jnp.asarray(g, jnp.bfloat16)
        tp.data.zero_()
        tg = torch.tensor(np.asarray(g, np.float32)).to(torch.bfloat16)
        tp.grad = tg.add(torch.tensor(np.asarray(p, np.float32)).to(torch.bfloat16), alpha=wd)
        opt.step()
        updates, state = tx.update(g, state, p)
        want = tp.detach().float().numpy()
        np.testing.assert_allclose(np.asarray(updates, np.float32), want, rtol=2.0**-7, atol=0)
