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
