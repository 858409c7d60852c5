"""Guard: unit rules, and a run with NaN injected at random steps that recovers (C5.1)."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.train.guard import (
    all_finite,
    guard_init,
    guard_update,
    rollback_lr_scale,
    should_rollback,
    tree_select,
)
from jaxparadigm.train.loop import train


def test_guard_counters_follow_the_rule():
    s = guard_init()
    for finite in [True, False, False, True, False]:
        s = guard_update(s, jnp.array(finite))
    assert (int(s.bad_streak), int(s.skipped), int(s.rollbacks)) == (1, 3, 0)
    assert should_rollback(s, 1) and not should_rollback(s, 2)


def test_all_finite_and_select():
    assert bool(all_finite({"a": jnp.ones(3)}, ()))
    assert not bool(all_finite({"a": jnp.array([1.0, jnp.inf])}))
    picked = tree_select(jnp.array(False), {"a": jnp.ones(2)}, {"a": jnp.zeros(2)})
    np.testing.assert_array_equal(picked["a"], [0.0, 0.0])


def test_bad_guard_arguments():
    with pytest.raises(ValueError, match="max_bad_steps: got 0"):
        should_rollback(guard_init(), 0)
    with pytest.raises(ValueError, match="lr_decay_on_rollback: got 1.5"):
        rollback_lr_scale(1.0, 1.5)
    assert rollback_lr_scale(0.5, 0.5) == 0.25


def _poison(bad_steps):
    def transform(step, batch):
        if step in bad_steps:
            batch = {**batch, "y": np.full_like(batch["y"], np.nan)}
        return batch

    return transform


GUARD_RUN = {"data": {"kind": "regression"}, "model": {"num_outputs": 1}}


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    from tests.train.conftest import tiny_config

    out = tmp_path_factory.mktemp("clean")
    return train(tiny_config(out, train={"steps": 60}, **GUARD_RUN), progress=False)


@pytest.mark.parametrize("checkpoints", [0, 10])
def test_nan_injection_recovers_close_to_the_clean_run(
    make_config, tmp_path, checkpoints, clean_run
):
    cfg = make_config(train={"steps": 60, "checkpoint": {"every": checkpoints}}, **GUARD_RUN)
    rng = np.random.default_rng(7)
    scattered = {int(s) for s in rng.choice(np.arange(1, 60), size=5, replace=False)}
    streak = {33, 34, 35}  # max_bad_steps (3) in a row: forces a rollback
    bad = scattered | streak
    clean = clean_run
    hurt = train(cfg, run_dir=tmp_path / "hurt", batch_transform=_poison(bad), progress=False)

    skips = [e.step for e in hurt.events if e.kind == "skip"]
    rollbacks = [e for e in hurt.events if e.kind == "rollback"]
    assert sorted(skips) == sorted(bad)
    assert len(rollbacks) >= 1 and rollbacks[0].step == 35
    assert ("checkpoint step 30" if checkpoints else "in-memory snapshot") in rollbacks[0].message
    assert float(hurt.state.lr_scale) == 0.5 ** len(rollbacks)
    assert int(hurt.state.guard.skipped) == len(bad)
    assert all(np.isfinite(v).all() for v in jnp.asarray(hurt.state.params["head"]["kernel"]))
    logged = [r for r in hurt.records if r.get("event") in ("skip", "rollback")]
    assert len(logged) == len(bad) + len(rollbacks)
    # Ends close to the clean run; both learned (MSE far below the first step's).
    assert clean.final_eval["loss"] < 0.1 * clean.losses[0]
    assert hurt.final_eval["loss"] < 0.1 * clean.losses[0]
    assert abs(hurt.final_eval["loss"] - clean.final_eval["loss"]) < 0.02


FP16_RUN = {
    "data": {"kind": "regression"},
    "model": {"num_outputs": 1, "dtype": "float16"},
    # S = 2**30 overflows float16 (max 65504) in the backward pass until it has halved ~15 times.
    "optim": {"loss_scale": {"enabled": True, "init_scale": 2.0**30}},
}


def test_loss_scale_overflows_are_not_guard_bad_steps(make_config, tmp_path):
    cfg = make_config(train={"steps": 40, "checkpoint": {"every": 10}}, **FP16_RUN)
    run = train(cfg, run_dir=tmp_path / "fp16", progress=False)
    g = run.state.guard
    assert not [e for e in run.events if e.kind in ("rollback", "skip")]
    assert (int(g.rollbacks), int(g.skipped), float(run.state.lr_scale)) == (0, 0, 1.0)
    overflows = [e.step for e in run.events if e.kind == "overflow"]
    assert len(overflows) > 3  # more in a row than max_bad_steps
    assert overflows == list(range(len(overflows)))  # the calibration, from step 0 on
    assert float(run.state.loss_scale.scale) == 2.0 ** (30 - len(overflows))
    assert np.isfinite(run.losses[-1]) and np.isfinite(run.final_eval["loss"])
    assert run.final_eval["loss"] < run.losses[0]
    # Bad data is still the guard's business with loss scaling on: NaN targets roll back, and
    # leave the (already calibrated) scale alone.
    hurt = train(
        cfg, run_dir=tmp_path / "hurt", batch_transform=_poison({30, 31, 32}), progress=False
    )
    rollbacks = [e for e in hurt.events if e.kind == "rollback"]
    assert [e.step for e in rollbacks] == [32] and "checkpoint step 30" in rollbacks[0].message
    assert sorted(e.step for e in hurt.events if e.kind == "skip") == [30, 31, 32]
    assert float(hurt.state.loss_scale.scale) == float(run.state.loss_scale.scale)
    assert float(hurt.state.lr_scale) == 0.5 and np.isfinite(hurt.losses[-1])


def test_rollback_keeps_the_current_loss_scale():
    import optax

    from jaxparadigm.optim import dynamic_loss_scale
    from jaxparadigm.train.rollback import rollback
    from jaxparadigm.train.step import init_train_state

    ls = dynamic_loss_scale(init_scale=2.0**30)
    params = {"w": jnp.ones(2)}
    snapshot = init_train_state(params, optax.sgd(0.1), seed=0, loss_scale=ls)
    current = snapshot._replace(
        step=jnp.int32(9),
        loss_scale=snapshot.loss_scale._replace(scale=jnp.float32(2.0**12)),
        guard=snapshot.guard._replace(bad_streak=jnp.int32(3)),
    )
    restored, msg = rollback(current, None, snapshot, 0.5)
    assert float(restored.loss_scale.scale) == 2.0**12  # not the snapshot's 2**30
    assert int(restored.step) == 9 and float(restored.lr_scale) == 0.5
    assert (int(restored.guard.bad_streak), int(restored.guard.rollbacks)) == (0, 1)
    assert "in-memory snapshot" in msg
