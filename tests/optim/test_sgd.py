"""SGD (C4.1): the step p <- p - lr * g, momentum, weight decay, skipped parameters."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import absltest, parameterized

from jaxparadigm import optim
from jaxparadigm.optim import sgd


def _tree(rng):
    return {
        "w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32),
        "b": [jnp.asarray(rng.normal(size=(3,)), jnp.float32)],
    }


def _run(tx, update, steps=100, seed=0):
    rng = np.random.default_rng(seed)
    params = _tree(rng)
    state = tx.init(params)
    for _ in range(steps):
        updates, state = update(_tree(rng), state, params)
        params = optax.apply_updates(params, updates)
    return params


class SgdTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(
        ("plain", dict(), dict()),
        ("momentum", dict(momentum=0.9), dict(momentum=0.9)),
        ("nesterov", dict(momentum=0.8, nesterov=True), dict(momentum=0.8, nesterov=True)),
    )
    def test_100_steps_match_optax(self, ours_kw, optax_kw):
        ours, theirs = sgd(0.05, **ours_kw), optax.sgd(0.05, **optax_kw)
        chex.assert_trees_all_close(
            _run(ours, self.variant(ours.update)),
            _run(theirs, self.variant(theirs.update)),
            rtol=1e-6,
            atol=1e-6,
        )

    def test_weight_decay_matches_optax_chain(self):
        ours = sgd(0.05, momentum=0.9, weight_decay=0.01)
        theirs = optax.chain(optax.add_decayed_weights(0.01), optax.sgd(0.05, momentum=0.9))
        chex.assert_trees_all_close(
            _run(ours, jax.jit(ours.update)), _run(theirs, jax.jit(theirs.update)), rtol=1e-6
        )

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_one_step_is_p_minus_lr_g(self):
        p = jnp.asarray([1.0, -2.0, 3.0])
        g = jnp.asarray([0.5, 0.25, -1.0])
        tx = sgd(0.1)
        updates, _ = self.variant(tx.update)(g, tx.init(p), p)
        np.testing.assert_allclose(p + updates, np.asarray([0.95, -2.025, 3.1]), rtol=1e-7)

    def test_parameters_without_gradient_are_skipped(self):
        params = {"a": jnp.ones((2,)), "frozen": jnp.full((2,), 7.0)}
        tx = sgd(0.5, momentum=0.9)
        state = tx.init(params)
        grads = {"a": jnp.ones((2,)), "frozen": None}
        updates, state = tx.update(grads, state, params)
        self.assertIsNone(updates["frozen"])
        np.testing.assert_array_equal(state[0].trace["frozen"], np.zeros(2))
        np.testing.assert_array_equal(state[0].trace["a"], np.ones(2))
        new = jax.tree.map(
            lambda u, p: p if u is None else p + u, updates, params, is_leaf=lambda x: x is None
        )
        np.testing.assert_array_equal(new["frozen"], np.full(2, 7.0))
        np.testing.assert_allclose(new["a"], np.full(2, 0.5))

    @parameterized.parameters(
        (dict(learning_rate=0.1, momentum="0.9"), TypeError, "momentum='0.9'"),
        (dict(learning_rate=0.1, weight_decay=[0.1]), TypeError, r"weight_decay=\[0.1\]"),
        (
            dict(learning_rate=0.1, momentum=0.9, accumulator_dtype="float8_e5m2"),
            ValueError,
            "accumulator_dtype='float8_e5m2'",
        ),
    )
    def test_bad_hyperparameters(self, kwargs, error, message):
        # What optax cannot take either. Negative momentum / weight decay and nesterov without
        # momentum were refused here before issue 23: optax takes them (with a warning here;
        # steps compared in test_optax_dropin_values.py).
        with self.assertRaisesRegex(error, message):
            sgd(**kwargs)

    def test_traced_nesterov_is_refused_as_optax_fails_on_it(self):
        params = jnp.ones(2)

        def first_update(lib, flag):
            tx = lib.sgd(0.1, momentum=0.9, nesterov=flag)
            return tx.update(params, tx.init(params))[0]

        with self.assertRaisesRegex(TypeError, "nesterov=.*expected a bool known on the host"):
            jax.jit(lambda flag: first_update(optim, flag))(True)
        with self.assertRaises(jax.errors.TracerBoolConversionError):  # optax's `if nesterov`
            jax.jit(lambda flag: first_update(optax, flag))(True)


@pytest.mark.crosscheck
@pytest.mark.parametrize(
    "kw", [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True, weight_decay=0.01)]
)
def test_matches_torch_sgd(kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    p0 = rng.normal(size=(4, 3)).astype(np.float32)
    frozen0 = rng.normal(size=(2,)).astype(np.float32)
    grads = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(100)]
    tp = torch.nn.Parameter(torch.tensor(p0))
    tfrozen = torch.nn.Parameter(torch.tensor(frozen0))  # never gets a gradient
    opt = torch.optim.SGD([tp, tfrozen], lr=0.01, **kw)
    for g in grads:
        tp.grad = torch.tensor(g)
        opt.step()
    tx = sgd(0.01, **kw)
    params = {"p": jnp.asarray(p0), "frozen": jnp.asarray(frozen0)}
    state = tx.init(params)
    update = jax.jit(tx.update)
    for g in grads:
        updates, state = update({"p": jnp.asarray(g), "frozen": None}, state, params)
        params = {"p": params["p"] + updates["p"], "frozen": params["frozen"]}
    np.testing.assert_allclose(np.asarray(params["p"]), tp.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(params["frozen"]), tfrozen.detach().numpy())


if __name__ == "__main__":
    absltest.main()
