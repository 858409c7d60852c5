"""Guard: unit rules, and a run with NaN injected at random steps that recovers (C5.1)."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.build import train_from_config as train
from jaxparadigm.train.guard import (
    GuardState,
    all_finite,
    give_up_reason,
    guard_init,
    guard_update,
    rollback_lr_scale,
    should_rollback,
    tree_select,
)


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


def test_guard_update_keeps_int32_and_rollbacks():
    s = GuardState(*(jnp.int32(v) for v in (2, 7, 5)))
    bad = guard_update(s, jnp.array(False))
    assert (int(bad.bad_streak), int(bad.skipped), int(bad.rollbacks)) == (3, 8, 5)
    good = guard_update(bad, jnp.array(True))
    assert (int(good.bad_streak), int(good.skipped), int(good.rollbacks)) == (0, 8, 5)
    for state in (guard_init(), bad, good):
        assert all(x.dtype == jnp.int32 and x.shape == () for x in state)
    with pytest.raises(AssertionError):
        guard_update(s, jnp.array([True, False]))  # one verdict per step


def test_all_finite_edge_cases():
    assert bool(all_finite())  # nothing to check: finite
    assert bool(all_finite({}, ()))
    assert not bool(all_finite({"a": jnp.ones(2)}, [jnp.zeros(3), jnp.array([jnp.nan])]))
    assert bool(all_finite(jnp.arange(3), {"b": jnp.float16(65504.0)}))
    picked = tree_select(jnp.array(True), {"a": jnp.ones(2)}, {"a": jnp.zeros(2)})
    np.testing.assert_array_equal(picked["a"], [1.0, 1.0])


def test_should_rollback_bound_and_type():
    s = GuardState(jnp.int32(3), jnp.int32(3), jnp.int32(0))
    assert should_rollback(s, 3) and should_rollback(s, 2) and not should_rollback(s, 4)
    for bad in (True, 3.0, "3", -1):
        with pytest.raises(ValueError) as err:
            should_rollback(s, bad)
        assert str(err.value) == f"max_bad_steps: got {bad!r}, expected an int >= 1"


def test_rollback_lr_scale_is_float32_and_bounded():
    assert rollback_lr_scale(0.1, 0.1) == float(np.float32(np.float32(0.1) * np.float32(0.1)))
    assert rollback_lr_scale(0.1, 0.1) != 0.1 * 0.1  # not the float64 product
    assert rollback_lr_scale(1e-30, 1e-30) == 0.0  # a float32 underflow shows as 0
    assert rollback_lr_scale(0.75, 1.0) == 0.75  # factor 1 is allowed
    for factor in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(ValueError) as err:
            rollback_lr_scale(1.0, factor)
        assert str(err.value) == (
            f"lr_decay_on_rollback: got {factor!r}, expected a value in (0, 1]"
        )


def test_give_up_reason_rule():
    assert give_up_reason(1, 0.5, max_rollbacks=2, min_lr_scale=0.5) is None  # both at bound
    assert give_up_reason(2, 0.5, max_rollbacks=2, min_lr_scale=0.5) == (
        "a rollback was needed after 2 rollback(s) (train.guard.max_rollbacks=2)"
    )
    assert give_up_reason(3, 1.0, max_rollbacks=2, min_lr_scale=0.5) is not None
    assert give_up_reason(0, 0.25, max_rollbacks=2, min_lr_scale=0.5) == (
        "a rollback would lower the lr scale to 0.25, below train.guard.min_lr_scale=0.5"
    )
    assert give_up_reason(0, float("nan"), 2, 1e-3).startswith("a rollback would lower")
    assert give_up_reason(0, 0.0, 2, 1e-3).startswith("a rollback would lower")
    for low in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError) as err:
            give_up_reason(0, 1.0, 2, low)
        assert str(err.value) == f"min_lr_scale: got {low!r}, expected a value > 0"


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
    from jaxparadigm.train.train_step import init_train_state

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
