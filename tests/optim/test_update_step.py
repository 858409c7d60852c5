"""update_step: one compiled optimiser step, bitwise equal to optax; on XLA:CPU each leaf's
loops one after the other (the order the module docstring's byte count rests on)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxparadigm.config import ClipConfig, OptimConfig, ScheduleConfig
from jaxparadigm.optim import adam, chain_for
from jaxparadigm.optim.update_step import CPU_COMPILER_OPTIONS, update_step


def _tree(rng, scale=1.0):
    return {
        "w": jnp.asarray(scale * rng.standard_normal((7, 5)), jnp.float32),
        "b": jnp.asarray(scale * rng.standard_normal(5), jnp.float32),
        "e": jnp.asarray(scale * rng.standard_normal(130), jnp.float32),
    }


def _by_hand(tx):
    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return jax.jit(step)


CHAIN = OptimConfig(
    name="adamw",
    learning_rate=3e-3,
    clip=ClipConfig(style="global", max_norm=0.5),
    schedule=ScheduleConfig(name="warmup_cosine_decay", warmup_steps=3, decay_steps=20),
)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda: adam(1e-2), lambda: optax.adam(1e-2)),
        (lambda: chain_for(CHAIN), lambda: chain_for(CHAIN)),
    ],
    ids=["adam_vs_optax", "chain_vs_hand_jit"],
)
def test_steps_are_bitwise_the_hand_jitted_steps(ours, theirs):
    rng = np.random.default_rng(0)
    params = _tree(rng)
    grads = [_tree(rng, 0.1) for _ in range(6)]
    tx_a, tx_b = ours(), theirs()
    step_a, step_b = update_step(tx_a), _by_hand(tx_b)
    pa, sa = jax.tree.map(jnp.copy, params), tx_a.init(params)
    pb, sb = params, tx_b.init(params)
    for g in grads:
        pa, sa = step_a(pa, sa, g)
        pb, sb = step_b(pb, sb, g)
    jax.tree.map(np.testing.assert_array_equal, pa, pb)
    jax.tree.map(np.testing.assert_array_equal, jax.tree.leaves(sa), jax.tree.leaves(sb))
    assert not any(np.array_equal(pa[k], params[k]) for k in params)  # it moved


def test_params_and_state_are_donated_unless_asked_not_to():
    rng = np.random.default_rng(1)
    params, grads = _tree(rng), _tree(rng, 0.1)
    tx = adam(1e-2)
    state = tx.init(params)
    update_step(tx, donate=False)(params, state, grads)
    assert not params["w"].is_deleted() and not state[0].mu["w"].is_deleted()
    update_step(tx)(params, state, grads)
    assert params["w"].is_deleted() and state[0].mu["w"].is_deleted()
    assert not grads["w"].is_deleted()


@pytest.mark.parametrize(("name", "value"), [("tx", "adam"), ("donate", 1)])
def test_bad_arguments_are_refused_naming_them(name, value):
    kw = {"tx": adam(1e-2), "donate": True, name: value}
    with pytest.raises(TypeError, match=name):
        update_step(kw.pop("tx"), **kw)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="an XLA:CPU scheduling option")
def test_on_cpu_each_leafs_loops_run_one_after_the_other():
    """The compiled step runs leaf i's m', v' and p' loops back to back (so p' reads m', v'
    from cache); jitting without the options interleaves the leaves (every m', v' first)."""
    n, leaves = 50_000, 4
    params = [jnp.ones((n,), jnp.float32) for _ in range(leaves)]
    tx = adam(1e-3)
    args = (params, tx.init(params), params)

    def leaf_order(compiled):
        entry = compiled.as_text().split("\nENTRY", 1)[1]
        order = []
        for line in entry.splitlines():
            if f"f32[{n}]" in line and " fusion(" in line:
                leaf = re.findall(r"%(?:params|state_0__mu|state_0__nu)_(\d+)_", line)
                order.append(int(leaf[0]) if leaf else None)
        return order

    ours = leaf_order(update_step(tx, donate=False).lower(*args).compile())
    default = leaf_order(_by_hand(tx).lower(*args).compile())
    assert len(ours) == 3 * leaves and None not in ours  # each loop reads its leaf's input
    runs = [ours[i : i + 3] for i in range(0, len(ours), 3)]
    assert all(len(set(r)) == 1 for r in runs) and len({r[0] for r in runs}) == leaves
    assert any(len(set(default[i : i + 3])) > 1 for i in range(0, len(default), 3))
    assert CPU_COMPILER_OPTIONS == {"xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"}
