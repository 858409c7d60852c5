"""Lion (``jaxparadigm.optim.lion``) against its oracle ``optax.lion`` (C4.1), and ``optim.name:
lion`` from a config through the optimiser registry."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import parameterized

from jaxparadigm.config import config_from_dict
from jaxparadigm.optim import (
    OPTIMISERS,
    ClipSettings,
    OptimSettings,
    chain_for,
    lion,
    scale_by_lion,
)


def _tree(seed):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"w": jax.random.normal(k1, (3, 4)), "b": jax.random.normal(k2, (4,))}


def _steps(tx, params, n=5):
    """``n`` steps of ``tx`` on gradients that change every step (so the momentum matters)."""
    state = tx.init(params)
    for i in range(n):
        grads = jax.tree.map(lambda p, g: g + 0.1 * p, params, _tree(100 + i))
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, state


class LionVariantsTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.named_parameters(
        ("defaults", {}),
        ("coefficients", {"b1": 0.8, "b2": 0.95, "weight_decay": 0.05}),
        ("no_decay", {"weight_decay": 0.0}),
        ("mask_tree", {"weight_decay": 0.5, "mask": {"w": True, "b": False}}),
        ("mask_callable", {"weight_decay": 0.5, "mask": lambda u: {"w": False, "b": True}}),
    )
    def test_five_steps_equal_optax_bit_for_bit(self, kw):
        params = _tree(0)

        def run(tx):
            return self.variant(lambda p: _steps(tx, p))(params)

        (ours, ours_state), (ref, ref_state) = run(lion(3e-2, **kw)), run(optax.lion(3e-2, **kw))
        chex.assert_trees_all_equal(ours, ref)
        chex.assert_trees_all_equal(ours_state[0].mu, ref_state[0].mu)
        chex.assert_trees_all_equal(ours_state[0].count, ref_state[0].count)


@pytest.mark.parametrize(
    "mask", [{"w": True, "b": False}, lambda u: {"w": True, "b": False}], ids=["tree", "callable"]
)
def test_lion_mask_leaves_the_unselected_leaves_undecayed(mask):
    """The mask selects where ``wd p`` is added: ``b`` steps as with no decay, ``w`` as with it."""
    params = _tree(0)
    masked, _ = _steps(lion(3e-2, weight_decay=0.5, mask=mask), params, n=2)
    decayed, _ = _steps(lion(3e-2, weight_decay=0.5), params, n=2)
    plain, _ = _steps(lion(3e-2, weight_decay=0.0), params, n=2)
    chex.assert_trees_all_equal(masked["w"], decayed["w"])
    chex.assert_trees_all_equal(masked["b"], plain["b"])
    assert not np.array_equal(decayed["b"], plain["b"])


def test_lion_direction_is_the_sign_of_the_interpolation():
    """One step by hand: u = sign((1 - b1) g + b1 m), m <- (1 - b2) g + b2 m."""
    tx = scale_by_lion(b1=0.5, b2=0.75)
    g1, g2 = {"w": jnp.array([1.0, -2.0, 0.0])}, {"w": jnp.array([-3.0, 1.0, 4.0])}
    state = tx.init(g1)
    u1, state = tx.update(g1, state)
    np.testing.assert_array_equal(u1["w"], [1.0, -1.0, 0.0])
    np.testing.assert_allclose(state.mu["w"], [0.25, -0.5, 0.0])
    u2, state = tx.update(g2, state)
    # 0.5 * g2 + 0.5 * m = [-1.375, 0.25, 2.0]
    np.testing.assert_array_equal(u2["w"], [-1.0, 1.0, 1.0])
    np.testing.assert_allclose(state.mu["w"], [-0.5625, -0.125, 1.0])
    assert int(state.count) == 2


def test_lion_stores_the_momentum_in_mu_dtype():
    ours = scale_by_lion(mu_dtype="bfloat16")
    ref = optax.scale_by_lion(mu_dtype=jnp.bfloat16)
    params, grads = _tree(0), _tree(1)
    s1, s2 = ours.init(params), ref.init(params)
    for _ in range(3):
        u1, s1 = ours.update(grads, s1)
        u2, s2 = ref.update(grads, s2)
    assert jax.tree.leaves(s1.mu)[0].dtype == jnp.bfloat16
    chex.assert_trees_all_equal(s1.mu, s2.mu)
    chex.assert_trees_all_equal(u1, u2)


def test_lion_from_a_config_is_optax_lion_after_clipping():
    cfg = config_from_dict(
        {
            "name": "x",
            "optim": {
                "name": "lion",
                "learning_rate": 3e-3,
                "b1": 0.9,
                "b2": 0.99,
                "weight_decay": 0.1,
                "clip": {"style": "global", "max_norm": 0.5},
            },
        }
    )
    ours = chain_for(cfg.optim)
    ref = optax.chain(
        optax.clip_by_global_norm(0.5), optax.lion(3e-3, b1=0.9, b2=0.99, weight_decay=0.1)
    )
    (p1, _), (p2, _) = _steps(ours, _tree(0)), _steps(ref, _tree(0))
    chex.assert_trees_all_equal(p1, p2)


def test_lion_has_no_live_form():
    with pytest.raises(ValueError, match="optim.name='lion': no live form"):
        chain_for(OptimSettings(name="lion"), live=True)


def test_the_allowed_optimiser_names_are_the_registry():
    """``optim.name`` admits exactly the registry's keys (lion included), in the library and in the
    config, with one error listing them."""
    assert "lion" in OPTIMISERS
    for name in OPTIMISERS:
        chain_for(OptimSettings(name=name, clip=ClipSettings(style="none")))
        assert config_from_dict({"name": "x", "optim": {"name": name}}).optim.name == name
    with pytest.raises(
        ValueError, match=r"^optim\.name: got 'nope', expected one of 'adam', .*'lion'$"
    ):
        OptimSettings(name="nope")
    with pytest.raises(ValueError, match=r"'optim\.name': got 'nope' \(str\), expected one of"):
        config_from_dict({"name": "x", "optim": {"name": "nope"}})
