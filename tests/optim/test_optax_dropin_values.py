"""Optax as a drop-in, hyper-parameters (issue 23, item 5): every value optax 0.2.8 computes with
is accepted and gives optax's updates step by step; a value that is surely a mistake warns.

Each case was refused (``ValueError``/``TypeError``) before this change. The oracle is optax
itself (``optax.adam``/``adamw``/``sgd``/``trace``/``add_decayed_weights``/``clip_by_global_norm``),
torch for the torch-style clipping; each case runs three steps on tiny params with a zero in the
first gradient (so ``eps = 0`` meets ``0 / 0`` as in optax) and compares the updates at every step,
NaN for NaN. The warnings raised are pinned by name: exactly the listed arguments warn.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxparadigm.optim as ours
from jaxparadigm.optim import schedules as S

PARAMS = {"w": jnp.array([1.0, -2.0, 0.5]), "b": jnp.array([[0.3, -0.1]])}
GRADS = [
    {"w": jnp.array([0.0, 0.2, -0.3]), "b": jnp.array([[0.5, 0.0]])},
    {"w": jnp.array([0.4, -0.1, 0.2]), "b": jnp.array([[-0.2, 0.3]])},
    {"w": jnp.array([-0.3, 0.6, 0.1]), "b": jnp.array([[0.1, -0.4]])},
]


def steps(tx, params=PARAMS, grads=GRADS):
    """The updates of ``len(grads)`` steps (params moved by each), as numpy trees."""
    state = tx.init(params)
    out = []
    for g in grads:
        updates, state = tx.update(g, state, params)
        params = optax.apply_updates(params, updates)
        out.append(jax.tree.map(np.asarray, updates))
    return out


def assert_same_steps(got, want, rtol=1e-6):
    assert len(got) == len(want)
    for step, (a, b) in enumerate(zip(got, want, strict=True)):
        assert jax.tree.structure(a) == jax.tree.structure(b), step
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            assert x.dtype == y.dtype, (step, x.dtype, y.dtype)
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-7, equal_nan=True, err_msg=step)


def build_warned(build):
    """``build()`` and the names of the arguments it warned about (``name=`` prefixes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tx = build()
    return tx, sorted(str(w.message).split("=")[0] for w in caught)


NAN, INF = float("nan"), float("inf")
OPTAX_SCHED = optax.linear_schedule(0.1, -0.05, 2)


def sched():
    """A weight-decay schedule crossing 0 (its ``end_value`` warns) and optax's ``OPTAX_SCHED``."""
    return S.linear(0.1, -0.05, 2)


CASES = [
    # (id, ours, optax's, names that warn)
    ("adam_b1_one", lambda: ours.adam(0.1, b1=1.0), lambda: optax.adam(0.1, b1=1.0), ["b1"]),
    ("adam_b1_above_one", lambda: ours.adam(0.1, b1=1.5), lambda: optax.adam(0.1, b1=1.5), ["b1"]),
    ("adam_b1_negative", lambda: ours.adam(0.1, b1=-0.1), lambda: optax.adam(0.1, b1=-0.1), ["b1"]),
    ("adam_b2_one", lambda: ours.adam(0.1, b2=1.0), lambda: optax.adam(0.1, b2=1.0), ["b2"]),
    ("adam_b2_negative", lambda: ours.adam(0.1, b2=-0.5), lambda: optax.adam(0.1, b2=-0.5), ["b2"]),
    ("adam_b1_nan", lambda: ours.adam(0.1, b1=NAN), lambda: optax.adam(0.1, b1=NAN), ["b1"]),
    ("adam_eps_zero", lambda: ours.adam(0.1, eps=0.0), lambda: optax.adam(0.1, eps=0.0), ["eps"]),
    (
        "adam_eps_zero_with_eps_root",
        lambda: ours.adam(0.1, eps=0.0, eps_root=1e-8),
        lambda: optax.adam(0.1, eps=0.0, eps_root=1e-8),
        [],
    ),
    (
        "adam_eps_negative",
        lambda: ours.adam(0.1, eps=-1e-3),
        lambda: optax.adam(0.1, eps=-1e-3),
        ["eps"],
    ),
    ("adam_eps_inf", lambda: ours.adam(0.1, eps=INF), lambda: optax.adam(0.1, eps=INF), ["eps"]),
    (
        "adam_eps_root_negative",
        lambda: ours.adam(0.1, eps_root=-1e-3),
        lambda: optax.adam(0.1, eps_root=-1e-3),
        ["eps_root"],
    ),
    ("adam_lr_nan", lambda: ours.adam(NAN), lambda: optax.adam(NAN), ["learning_rate"]),
    ("adam_lr_inf", lambda: ours.adam(INF), lambda: optax.adam(INF), ["learning_rate"]),
    (
        "adam_mu_float64",  # canonicalised as optax does: float32 while x64 is off
        lambda: ours.adam(0.1, mu_dtype=jnp.float64),
        lambda: optax.adam(0.1, mu_dtype=jnp.float64),
        [],
    ),
    (
        "adam_mu_float64_name",
        lambda: ours.adam(0.1, mu_dtype="float64"),
        lambda: optax.adam(0.1, mu_dtype="float64"),
        [],
    ),
    (
        "adam_mu_int32",  # optax truncates the stored moment; so do we, with a warning
        lambda: ours.adam(0.1, mu_dtype=jnp.int32),
        lambda: optax.adam(0.1, mu_dtype=jnp.int32),
        ["mu_dtype"],
    ),
    (
        "adam_mu_bool",
        lambda: ours.adam(0.1, mu_dtype=bool),
        lambda: optax.adam(0.1, mu_dtype=bool),
        ["mu_dtype"],
    ),
    (
        "adamw_negative_weight_decay",
        lambda: ours.adamw(0.1, weight_decay=-0.1),
        lambda: optax.adamw(0.1, weight_decay=-0.1),
        ["weight_decay"],
    ),
    (
        "adamw_nan_weight_decay",
        lambda: ours.adamw(0.1, weight_decay=NAN),
        lambda: optax.adamw(0.1, weight_decay=NAN),
        ["weight_decay"],
    ),
    (
        "adamw_scheduled_weight_decay",
        lambda: ours.adamw(0.1, weight_decay=sched()),
        lambda: optax.adamw(0.1, weight_decay=OPTAX_SCHED),
        ["end_value"],  # the schedule's own warning: it goes negative
    ),
    (
        "sgd_negative_momentum",
        lambda: ours.sgd(0.1, momentum=-0.5),
        lambda: optax.sgd(0.1, momentum=-0.5),
        ["momentum"],
    ),
    (
        "sgd_momentum_above_one",
        lambda: ours.sgd(0.1, momentum=1.5),
        lambda: optax.sgd(0.1, momentum=1.5),
        ["momentum"],
    ),
    (
        "sgd_negative_nesterov",
        lambda: ours.sgd(0.1, momentum=-0.5, nesterov=True),
        lambda: optax.sgd(0.1, momentum=-0.5, nesterov=True),
        ["momentum"],
    ),
    (
        "sgd_nesterov_zero_momentum",
        lambda: ours.sgd(0.1, momentum=0.0, nesterov=True),
        lambda: optax.sgd(0.1, momentum=0.0, nesterov=True),
        ["nesterov"],
    ),
    (
        "sgd_nesterov_no_momentum",
        lambda: ours.sgd(0.1, nesterov=True),
        lambda: optax.sgd(0.1, nesterov=True),
        ["nesterov"],
    ),
    (
        "sgd_nesterov_int",
        lambda: ours.sgd(0.1, momentum=0.9, nesterov=1),
        lambda: optax.sgd(0.1, momentum=0.9, nesterov=1),
        ["nesterov"],
    ),
    (
        "sgd_momentum_bool",
        lambda: ours.sgd(0.1, momentum=True),
        lambda: optax.sgd(0.1, momentum=True),
        ["momentum", "momentum"],
    ),
    ("sgd_lr_nan", lambda: ours.sgd(NAN), lambda: optax.sgd(NAN), ["learning_rate"]),
    (
        "sgd_accumulator_float64",
        lambda: ours.sgd(0.1, momentum=0.9, accumulator_dtype=jnp.float64),
        lambda: optax.sgd(0.1, momentum=0.9, accumulator_dtype=jnp.float64),
        [],
    ),
    (
        "sgd_accumulator_int32",
        lambda: ours.sgd(0.1, momentum=0.9, accumulator_dtype=jnp.int32),
        lambda: optax.sgd(0.1, momentum=0.9, accumulator_dtype=jnp.int32),
        ["accumulator_dtype"],
    ),
    (
        "sgd_negative_weight_decay",  # our torch-style L2 term: optax's add_decayed_weights first
        lambda: ours.sgd(0.1, momentum=0.9, weight_decay=-0.1),
        lambda: optax.chain(optax.add_decayed_weights(-0.1), optax.sgd(0.1, momentum=0.9)),
        ["weight_decay"],
    ),
    ("trace_negative", lambda: ours.trace(-0.5), lambda: optax.trace(-0.5), ["decay"]),
    ("lion_b1_negative", lambda: ours.lion(0.1, b1=-0.5), lambda: optax.lion(0.1, b1=-0.5), ["b1"]),
    ("lion_b2_above_one", lambda: ours.lion(0.1, b2=1.5), lambda: optax.lion(0.1, b2=1.5), ["b2"]),
    ("lion_b1_nan", lambda: ours.lion(0.1, b1=NAN), lambda: optax.lion(0.1, b1=NAN), ["b1"]),
    ("lion_b_at_one", lambda: ours.lion(0.1, b1=1.0), lambda: optax.lion(0.1, b1=1.0), []),
    (
        "lion_string_mask_flag",
        lambda: ours.lion(0.1, mask={"w": "no", "b": False}),
        lambda: optax.lion(0.1, mask={"w": "no", "b": False}),
        ["mask"],
    ),
    (
        "add_decayed_weights_negative",
        lambda: ours.add_decayed_weights(-0.1),
        lambda: optax.add_decayed_weights(-0.1),
        ["weight_decay"],
    ),
    (
        "add_decayed_weights_prefix_mask",
        lambda: ours.add_decayed_weights(0.5, {"w": True, "b": False}),
        lambda: optax.add_decayed_weights(0.5, {"w": True, "b": False}),
        [],
    ),
    (
        "add_decayed_weights_array_and_int_flags",
        lambda: ours.add_decayed_weights(0.5, {"w": jnp.array(False), "b": 1}),
        lambda: optax.add_decayed_weights(0.5, {"w": jnp.array(False), "b": 1}),
        [],
    ),
    (
        "add_decayed_weights_string_flag",
        lambda: ours.add_decayed_weights(0.5, {"w": "no", "b": False}),
        lambda: optax.add_decayed_weights(0.5, {"w": "no", "b": False}),
        ["mask"],
    ),
    (
        "add_decayed_weights_callable_mask",  # called on the updates, as optax calls it
        lambda: ours.add_decayed_weights(0.5, lambda t: jax.tree.map(lambda x: x.ndim == 1, t)),
        lambda: optax.add_decayed_weights(0.5, lambda t: jax.tree.map(lambda x: x.ndim == 1, t)),
        [],
    ),
    # optax's positional order and NAdam: optax code ports unchanged (a TypeError or a
    # misplaced argument before: our nu_dtype / weight_decay sat between optax's arguments).
    (
        "adam_nesterov",
        lambda: ours.adam(0.1, nesterov=True),
        lambda: optax.adam(0.1, nesterov=True),
        [],
    ),
    (
        "adamw_positional_nesterov",
        lambda: ours.adamw(
            0.1, 0.8, 0.99, 1e-6, 0.0, None, 0.01, {"w": True, "b": False}, nesterov=True
        ),
        lambda: optax.adamw(
            0.1, 0.8, 0.99, 1e-6, 0.0, None, 0.01, {"w": True, "b": False}, nesterov=True
        ),
        [],
    ),
    (
        "sgd_positional_accumulator_dtype",
        lambda: ours.sgd(0.1, 0.9, True, jnp.bfloat16),
        lambda: optax.sgd(0.1, 0.9, True, jnp.bfloat16),
        [],
    ),
    (
        "sgd_array_rate",  # not readable as one host number: used as given, as optax uses it
        lambda: ours.sgd(jnp.asarray([0.1]), momentum=0.9),
        lambda: optax.sgd(jnp.asarray([0.1]), momentum=0.9),
        [],
    ),
    (
        "adam_numpy_scalar_b1",
        lambda: ours.adam(np.float32(0.1), b1=np.float64(1.2)),
        lambda: optax.adam(np.float32(0.1), b1=np.float64(1.2)),
        ["b1"],
    ),
    (
        "add_decayed_weights_schedule",
        lambda: ours.add_decayed_weights(sched()),
        lambda: optax.add_decayed_weights(OPTAX_SCHED),
        ["end_value"],
    ),
]
CLIP_BOUNDS = [(0.0, ["max_norm"]), (-1.0, ["max_norm"]), (NAN, ["max_norm"]), (INF, [])]


@pytest.mark.parametrize("name, build, build_optax, warns", CASES, ids=[c[0] for c in CASES])
def test_accepts_what_optax_accepts_with_optax_steps(name, build, build_optax, warns):
    tx, warned = build_warned(build)
    assert warned == sorted(warns), name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optax's own dtype warnings (x64 off)
        assert_same_steps(steps(tx), steps(build_optax()))


@pytest.mark.parametrize("bound, warns", CLIP_BOUNDS, ids=["zero", "negative", "nan", "inf"])
def test_clip_bounds_as_optax(bound, warns):
    """``clip_by_global_norm`` and (on each leaf alone) ``clip_by_norm_per_leaf`` give optax's
    ``clip_by_global_norm`` for any bound: 0 zeroes, a negative bound flips, ``inf`` is no clip."""
    tx, warned = build_warned(lambda: ours.clip_by_global_norm(bound))
    assert warned == warns
    assert_same_steps(steps(tx), steps(optax.clip_by_global_norm(bound)))
    per_leaf, _ = build_warned(lambda: ours.clip_by_norm_per_leaf(bound))
    for leaf in ("w", "b"):
        only = [{leaf: g[leaf]} for g in GRADS]
        params = {leaf: PARAMS[leaf]}
        want = steps(optax.clip_by_global_norm(bound), params, only)
        assert_same_steps(steps(per_leaf, params, only), want)


def test_clip_inf_bound_was_nan_before():
    """Regression: ``max_norm / max(norm, max_norm)`` is ``inf / inf = NaN`` for an infinite
    bound, where optax leaves the gradients unchanged."""
    (updates,) = steps(ours.clip_by_global_norm(INF), grads=GRADS[:1])
    np.testing.assert_array_equal(updates["w"], np.asarray(GRADS[0]["w"]))


@pytest.mark.parametrize("bound", [0.0, -1.0, 2.0])
def test_tf_clip_bounds_follow_tfs_formula(bound):
    """``tf.clip_by_global_norm``'s formula ``g * c * min(1/n, 1/c)`` (TF checks no sign): 0
    zeroes the gradients, a negative bound gives ``c * (1/c) = 1`` (no clipping)."""
    tx, warned = build_warned(lambda: ours.clip_by_global_norm_tf(bound))
    assert warned == (["clip_norm"] if bound <= 0 else [])
    (updates,) = steps(tx, grads=GRADS[:1])
    norm = np.sqrt(sum(np.sum(np.square(np.asarray(g))) for g in GRADS[0].values()))
    factor = bound * min(1.0 / norm, np.inf if bound == 0 else 1.0 / bound)
    for key in ("w", "b"):
        np.testing.assert_allclose(updates[key], np.asarray(GRADS[0][key]) * factor, rtol=1e-6)


@pytest.mark.crosscheck
@pytest.mark.parametrize("bound", [0.0, -1.0, NAN, INF], ids=["zero", "negative", "nan", "inf"])
def test_torch_clip_bounds_as_torch(bound):
    torch = pytest.importorskip("torch")
    tx, warned = build_warned(lambda: ours.clip_grad_norm_torch(bound))
    assert warned == ([] if bound == INF else ["max_norm"])
    (updates,) = steps(tx, grads=GRADS[:1])
    tensors = {k: torch.nn.Parameter(torch.zeros(np.shape(v))) for k, v in GRADS[0].items()}
    for key, param in tensors.items():
        param.grad = torch.tensor(np.asarray(GRADS[0][key]))
    torch.nn.utils.clip_grad_norm_(list(tensors.values()), bound)
    for key, param in tensors.items():
        np.testing.assert_allclose(updates[key], param.grad.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw"])
def test_meta_gradient_through_the_learning_rate_as_optax(name):
    """An optimiser built inside ``jax.grad`` (a learning rate being tuned): optax takes the
    traced rate; ours refused it with ``TypeError`` (``float()`` of a tracer)."""

    def loss(lr, lib):
        tx = getattr(lib, name)(lr)
        updates, _ = tx.update(GRADS[1], tx.init(PARAMS), PARAMS)
        return sum(jnp.sum(p**2) for p in jax.tree.leaves(optax.apply_updates(PARAMS, updates)))

    got = jax.grad(loss)(0.1, ours)
    np.testing.assert_allclose(got, jax.grad(loss)(0.1, optax), rtol=1e-6)


def test_traced_adam_coefficients_under_jit_as_optax():
    def first_update(b1, eps, lib):
        tx = lib.adam(0.1, b1=b1, eps=eps)
        return tx.update(GRADS[1], tx.init(PARAMS), PARAMS)[0]

    got = jax.jit(first_update, static_argnums=2)(0.5, 1e-3, ours)
    want = jax.jit(first_update, static_argnums=2)(0.5, 1e-3, optax)
    assert_same_steps([got], [want])


def test_injected_values_warn_and_step_as_static():
    """``set_hyperparams`` takes what the factory takes: the same warning, the same step."""
    tx = ours.inject_hyperparams(ours.adam)(0.1)
    state = tx.init(PARAMS)
    with pytest.warns(UserWarning, match=r"^b1=1\.5: accepted \(as optax\), but outside \[0, 1\)"):
        state = ours.set_hyperparams(state, b1=1.5)
    with pytest.warns(UserWarning, match=r"^eps=-0\.001: accepted"):
        state = ours.set_hyperparams(state, eps=-1e-3)
    updates, _ = tx.update(GRADS[1], state, PARAMS)
    assert_same_steps(
        [jax.tree.map(np.asarray, updates)],
        steps(optax.adam(0.1, b1=1.5, eps=-1e-3), grads=GRADS[1:2]),
    )


@pytest.mark.parametrize("factory", ["sgd", "adamw"])
def test_injected_scheduled_weight_decay_as_static(factory):
    kw = {"momentum": 0.9} if factory == "sgd" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        live = ours.inject_hyperparams(getattr(ours, factory))(0.1, weight_decay=sched(), **kw)
        static = getattr(ours, factory)(0.1, weight_decay=sched(), **kw)
    assert_same_steps(steps(live), steps(static), rtol=0)
    assert "weight_decay" not in live.init(PARAMS).hyperparams  # the schedule stays a schedule


def test_warnings_point_at_the_callers_line():
    """However deep the check (inject -> factory -> coefficients -> accept_number), the warning's
    location is the user's line, so the default filter shows each distinct call once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours.inject_hyperparams(ours.adam)(0.1, b1=1.5)
        ours.sgd(0.1, momentum=-0.5, nesterov=True)
    assert [w.filename for w in caught] == [__file__, __file__]
    assert [str(w.message).split("=")[0] for w in caught] == ["b1", "momentum"]


def test_nesterov_that_is_not_a_bool_is_read_by_its_truth_value():
    with pytest.warns(UserWarning, match=r"^nesterov='false': .* read by its truth value \(True\)"):
        tx = ours.sgd(0.1, momentum=0.9, nesterov="false")
    assert_same_steps(steps(tx), steps(optax.sgd(0.1, momentum=0.9, nesterov=True)))


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw"])
def test_learning_rate_none_is_no_scaling_as_optax(name):
    """optax's ``scale_by_learning_rate(None)`` is the identity, so ``optax.sgd(None)`` returns the
    raw direction; ours refused ``None``. It warns: the updates are not negated."""
    with pytest.warns(UserWarning, match=r"^learning_rate=None: .* ascends the loss"):
        tx = getattr(ours, name)(None)
    assert_same_steps(steps(tx), steps(getattr(optax, name)(None)))
    with pytest.raises(TypeError, match=r"^learning_rate=None: inject_hyperparams needs a rate"):
        ours.inject_hyperparams(getattr(ours, name))(None)  # kept: nothing for lr_scale to scale


def test_scale_by_learning_rate_flip_sign_as_optax():
    for lr in (0.1, S.linear(0.1, 0.0, 2)):
        tx = ours.scale_by_learning_rate(lr, flip_sign=False)
        ref = optax.scale_by_learning_rate(
            0.1 if lr == 0.1 else optax.linear_schedule(0.1, 0.0, 2), flip_sign=False
        )
        assert_same_steps(steps(tx), steps(ref))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no sign flip asked for: None is a plain identity
        assert_same_steps(
            steps(ours.scale_by_learning_rate(None, flip_sign=False)), steps(optax.identity())
        )


@pytest.mark.parametrize("factory", ["adam", "adamw"])
def test_injected_nesterov_is_bitwise_the_static_nadam(factory):
    live = ours.inject_hyperparams(getattr(ours, factory))(0.1, b1=0.8, nesterov=True)
    static = getattr(ours, factory)(0.1, b1=0.8, nesterov=True)
    assert_same_steps(steps(live), steps(static), rtol=0)
