"""jaxparadigm.app.cpu_devices (issue 26): ``--cpu-devices`` / ``JAXPARADIGM_CPU_DEVICES``, the
plan's rules, a child process that really gets N CPU devices, and N devices giving one device's
numbers (Adam and clip+AdamW over a sharded parameter tree; a 100-step charlm run)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from jaxparadigm import cli
from jaxparadigm.app import cpu_devices as cd
from jaxparadigm.config import config_from_dict, load_config, read_config
from jaxparadigm.errors import InputError

ROOT = str(Path(__file__).resolve().parents[2])
CHARLM = Path(ROOT) / "configs" / "charlm_pydoc.yaml"
COUNT = "--xla_force_host_platform_device_count"


def _cfg(task="train", batch_size=32):
    return config_from_dict({"name": "t", "task": task, "data": {"batch_size": batch_size}})


def _request(count, source="--cpu-devices", text=None):
    return cd.CpuRequest(count, source, str(count) if text is None else text)


# --- values ----------------------------------------------------------------------------------


def test_parse_counts_and_auto(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert cd.parse_cpu_devices("1", "w") == 1
    assert cd.parse_cpu_devices(" 8 ", "w") == 8
    assert cd.parse_cpu_devices(3, "w") == 3
    assert cd.parse_cpu_devices("auto", "w") == 3
    assert cd.parse_cpu_devices("AUTO", "w") == 3


@pytest.mark.parametrize("bad", ["0", "-1", "two", "2.5", "", "1e3", True])
def test_parse_refuses_with_one_message(bad):
    with pytest.raises(InputError) as err:
        cd.parse_cpu_devices(bad, "--cpu-devices")
    msg = str(err.value)
    assert msg.startswith(f"--cpu-devices: got {bad!r}, expected an integer >= 1 or 'auto'")
    assert "\n" not in msg


def test_usable_cores_is_the_affinity_else_cpu_count(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 7)
    assert cd.usable_cores() == 2
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert cd.usable_cores() == 7
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cd.usable_cores() == 1


def test_request_option_beats_environment_beats_default(monkeypatch):
    env = {cd.ENV_CPU_DEVICES: "3"}
    r = cd.cpu_request("2", env)
    assert (r.devices, r.source, r.explicit, r.exact, str(r)) == (
        2,
        "--cpu-devices",
        True,
        True,
        "--cpu-devices 2",
    )
    r = cd.cpu_request(None, env)
    assert (r.devices, r.source, str(r)) == (3, cd.ENV_CPU_DEVICES, "JAXPARADIGM_CPU_DEVICES=3")
    monkeypatch.setattr(cd, "DEFAULT_CPU_DEVICES", 5)
    for blank in ({}, {cd.ENV_CPU_DEVICES: " "}):
        r = cd.cpu_request(None, blank)
        assert (r.devices, r.explicit, r.exact) == (5, False, False)
    monkeypatch.setattr(cd, "DEFAULT_CPU_DEVICES", "auto")
    monkeypatch.setattr(cd, "usable_cores", lambda: 6)
    assert cd.cpu_request(None, {}).devices == 6
    auto = cd.cpu_request(None, {cd.ENV_CPU_DEVICES: "auto"})
    assert (auto.devices, auto.explicit, auto.exact) == (6, True, False)


def test_bad_environment_value_names_the_variable():
    with pytest.raises(InputError, match=r"^environment variable JAXPARADIGM_CPU_DEVICES: got 'x'"):
        cd.cpu_request(None, {cd.ENV_CPU_DEVICES: "x"})


def test_user_device_count_reads_jax_then_the_last_xla_flag():
    flags = f"--xla_foo=1 {COUNT}=4 --xla_bar {COUNT}=6"
    assert cd.user_device_count({"XLA_FLAGS": flags}) == (f"XLA_FLAGS {COUNT}", 6)
    assert cd.user_device_count({"XLA_FLAGS": flags, "JAX_NUM_CPU_DEVICES": "3"}) == (
        "JAX_NUM_CPU_DEVICES",
        3,
    )
    assert cd.user_device_count({"XLA_FLAGS": "--xla_foo", "JAX_NUM_CPU_DEVICES": "-1"}) is None
    assert cd.user_device_count({f"{COUNT}_x": "2", "XLA_FLAGS": f"{COUNT}_x=2"}) is None
    with pytest.raises(InputError, match=f"XLA_FLAGS {COUNT}: got 'many'"):
        cd.user_device_count({"XLA_FLAGS": f"{COUNT}=many"})


def test_with_cpu_devices_replaces_the_count_keeps_other_flags():
    env = {"XLA_FLAGS": f"--xla_a {COUNT}=8 --xla_b=1", "JAX_NUM_CPU_DEVICES": "8", "HOME": "/h"}
    out = cd.with_cpu_devices(env, 2)
    assert out == {"XLA_FLAGS": f"--xla_a --xla_b=1 {COUNT}=2", "HOME": "/h"}
    assert env["JAX_NUM_CPU_DEVICES"] == "8"  # the input is not changed
    assert cd.with_cpu_devices({}, 3)["XLA_FLAGS"] == f"{COUNT}=3"


# --- the plan's rules ---------------------------------------------------------------------------


def _plan(request, cfg=None, **kw):
    kw = {"mode_set": False, "single_process": True, **kw}
    return cd.plan_cpu_devices(request, cfg or _cfg(), **kw)


def test_two_devices_train_in_the_data_layout_unless_the_config_says():
    plan = _plan(_request(2))
    assert (plan.devices, plan.data_layout) == (2, True)
    assert plan.notes == (
        "2 CPU devices (--cpu-devices 2): train.sharding.mode=data, the batch "
        "split over them (set train.sharding.mode to choose another layout)",
    )
    assert _plan(_request(2), mode_set=True) == (2, False, ())
    assert _plan(_request(2), _cfg("mixed_precision")) == (2, False, ())
    assert _plan(_request(1)) == (1, False, ())


def test_the_users_count_wins_and_a_different_request_is_noted():
    user = ("XLA_FLAGS --xla_force_host_platform_device_count", 4)
    assert _plan(_request(4), user_count=user) == (None, False, ())
    assert _plan(_request(2, "DEFAULT_CPU_DEVICES"), user_count=user) == (None, False, ())
    plan = _plan(_request(2), user_count=user)
    assert plan == (
        None,
        False,
        (f"--cpu-devices 2: not applied, {user[0]} already sets 4 (the user's setting wins)",),
    )


def test_a_group_process_gets_only_an_explicit_count_and_no_layout():
    assert _plan(_request(2, "DEFAULT_CPU_DEVICES"), single_process=False) == (None, False, ())
    assert _plan(_request(2), single_process=False) == (2, False, ())


def test_an_exact_count_must_divide_the_batch():
    with pytest.raises(InputError) as err:
        _plan(_request(3))
    assert str(err.value).startswith(
        "--cpu-devices 3: data.batch_size=32 cannot be split over 3 devices"
    )
    assert "expected a divisor of 32, or set train.sharding.mode=none" in str(err.value)
    assert _plan(_request(3), mode_set=True).devices == 3  # the config's own layout: its check


@pytest.mark.parametrize(
    ("request_", "batch", "want"),
    [
        (cd.CpuRequest(3, "--cpu-devices", "auto"), 32, 2),
        (cd.CpuRequest(7, cd.ENV_CPU_DEVICES, "auto"), 30, 6),
        (cd.CpuRequest(5, "DEFAULT_CPU_DEVICES", "5"), 12, 4),
        (cd.CpuRequest(3, "DEFAULT_CPU_DEVICES", "3"), 7, 1),
    ],
)
def test_auto_and_the_default_come_down_to_a_divisor_of_the_batch(request_, batch, want):
    plan = _plan(request_, _cfg(batch_size=batch))
    assert (plan.devices, plan.data_layout) == (want, want > 1)
    assert plan.notes[0] == (
        f"{request_}: {want} CPU devices, not {request_.devices}: "
        f"data.batch_size={batch} splits evenly over {want}"
    )


def test_a_running_backend_refuses_an_explicit_change_and_skips_the_default():
    assert _plan(_request(2), running=2) == (2, True, _plan(_request(2)).notes)
    with pytest.raises(InputError, match=r"^--cpu-devices 2: JAX already runs .* with 1 CPU"):
        _plan(_request(2), running=1)
    plan = _plan(_request(2, "DEFAULT_CPU_DEVICES"), running=1)
    assert plan == (
        None,
        False,
        ("DEFAULT_CPU_DEVICES=2: not applied, JAX already runs with 1 CPU device(s)",),
    )


def test_apply_sets_xla_flags_before_jax_starts(monkeypatch):
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: None)
    env = {"XLA_FLAGS": "--xla_a"}
    cd.apply_cpu_plan(cd.CpuPlan(2, True, ()), env)
    assert env == {"XLA_FLAGS": f"--xla_a {COUNT}=2"}
    cd.apply_cpu_plan(cd.CpuPlan(None, False, ()), env)
    assert env == {"XLA_FLAGS": f"--xla_a {COUNT}=2"}
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: 2)
    env = {}
    cd.apply_cpu_plan(cd.CpuPlan(2, True, ()), env)
    assert env == {}  # a running backend: nothing to set


def test_running_cpu_devices_sees_this_process_backend():
    jax.devices()  # starts the backend (conftest forced 4 CPU devices)
    assert cd.running_cpu_devices() == len(jax.local_devices(backend="cpu")) == 4


@pytest.mark.parametrize(
    ("yaml_train", "overrides", "want"),
    [
        ({}, [], False),
        ({"sharding": {"mode": "none"}}, [], True),
        ({"sharding": {"min_size": 4}}, [], False),
        ({}, ["train.sharding.mode=none"], True),
        ({}, ["train.sharding={mode: fsdp}"], True),
        ({}, ["train.sharding.min_size=8", "train.steps=3"], False),
    ],
)
def test_config_sets_sharding_mode(tmp_path, yaml_train, overrides, want):
    """Whether the user set the mode is recorded when the file is read (no second read)."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "train": yaml_train}))
    assert read_config(path, overrides).sets("train.sharding.mode") is want


def test_prepare_command_devices_rules_one_and_four(monkeypatch):
    """index build|add: the request applied before JAX starts; the user's count wins; a backend
    already running (library caller) keeps the encoder's one device unless a count is asked."""
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: None)
    env = {"XLA_FLAGS": "--xla_a"}
    assert cd.prepare_command_devices(_request(2), env) == (2, ())
    assert env == {"XLA_FLAGS": f"--xla_a {COUNT}=2"}
    env = {"XLA_FLAGS": f"{COUNT}=3"}
    count, notes = cd.prepare_command_devices(_request(2), env)
    assert count == 3 and env == {"XLA_FLAGS": f"{COUNT}=3"}
    assert notes == (
        f"--cpu-devices 2: not applied, XLA_FLAGS {COUNT} already sets 3 (the user's setting wins)",
    )
    assert cd.prepare_command_devices(_request(3, "DEFAULT_CPU_DEVICES"), {}) == (3, ())
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: 4)
    env = {"XLA_FLAGS": f"{COUNT}=4"}
    assert cd.prepare_command_devices(_request(2, "DEFAULT_CPU_DEVICES"), env) == (None, ())
    assert cd.prepare_command_devices(_request(2, "DEFAULT_CPU_DEVICES"), {}) == (
        None,
        ("DEFAULT_CPU_DEVICES=2: not applied, JAX already runs with 4 CPU device(s)",),
    )
    assert cd.prepare_command_devices(_request(4), {}) == (4, ())
    with pytest.raises(InputError, match=r"^--cpu-devices 2: JAX already runs .* with 4 CPU"):
        cd.prepare_command_devices(_request(2), {})


# --- the command line ---------------------------------------------------------------------------


def test_cli_bad_option_or_variable_exit_2_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "ok.yaml"
    path.write_text("name: ok\n")
    assert cli.main(["run", str(path), "--cpu-devices", "zero"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxparadigm run: error: --cpu-devices: got 'zero', expected an integer")
    assert "\n" not in err
    monkeypatch.setenv(cd.ENV_CPU_DEVICES, "-2")
    assert cli.main(["run", str(path)]) == 2
    assert "environment variable JAXPARADIGM_CPU_DEVICES: got '-2'" in capsys.readouterr().err
    monkeypatch.delenv(cd.ENV_CPU_DEVICES)
    argv = ["run", str(path), "--cpu-devices", "2", "--num-processes", "2"]
    assert cli.main([*argv, "--devices-per-process", "2"]) == 2
    err = capsys.readouterr().err
    assert "--cpu-devices 2: given with --devices-per-process 2; expected one of them" in err


def _clean_env(**extra) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES", cd.ENV_CPU_DEVICES)
    }
    return {**env, "JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT, "TQDM_DISABLE": "1", **extra}


_PREPARE = textwrap.dedent(
    """
    import json, os, sys
    from jaxparadigm.app.cpu_devices import cpu_request, prepare_cpu_devices
    from jaxparadigm.config import read_config
    config, *overrides = sys.argv[1:]
    cfg, notes = prepare_cpu_devices(cpu_request(None, os.environ), read_config(config, overrides))
    import jax
    print(json.dumps({"devices": jax.device_count(), "mode": cfg.train.sharding.mode,
                      "notes": list(notes)}))
    """
)


def _prepare(env: dict, *overrides: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PREPARE, str(CHARLM), *overrides],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_child_asking_for_two_gets_two_cpu_devices_and_the_data_layout():
    got = _prepare(_clean_env(JAXPARADIGM_CPU_DEVICES="2"))
    assert (got["devices"], got["mode"]) == (2, "data")
    got = _prepare(_clean_env(JAXPARADIGM_CPU_DEVICES="2", XLA_FLAGS=f"{COUNT}=3"))
    assert (got["devices"], got["mode"]) == (3, "none")  # the user's flag wins
    assert got["notes"] == [
        f"JAXPARADIGM_CPU_DEVICES=2: not applied, XLA_FLAGS {COUNT} already "
        "sets 3 (the user's setting wins)"
    ]


def test_cli_refuses_a_count_that_does_not_divide_the_batch(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("XLA_FLAGS")  # no user count; JAX not started yet, as in a new process
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: None)
    assert cli.main(["run", str(CHARLM), "--cpu-devices", "3", f"out_dir={tmp_path}"]) == 2
    assert capsys.readouterr().err.strip() == (
        "jaxparadigm run: error: --cpu-devices 3: data.batch_size=32 cannot be split over 3 "
        "devices (a run of several CPU devices splits the batch, train.sharding.mode=data); "
        "expected a divisor of 32, or set train.sharding.mode=none"
    )
    assert "XLA_FLAGS" not in os.environ  # refused before anything was set


# --- N devices, one device's numbers ----------------------------------------------------------


def _sharded_loop(tx, params, grads, devices):
    """``len(grads)`` jitted updates of ``tx`` with params, state and grads split over
    ``devices`` by the sharding rule (one device: unsplit); the final params on the host."""
    from jaxparadigm.train.sharding import data_mesh, place, tree_shardings

    mesh = data_mesh(devices)
    shard = tree_shardings(params, mesh, min_size=1)
    params = place(params, shard)
    state = tx.init(params)

    @jax.jit
    def step(params, state, g):
        updates, state = tx.update(g, state, params)
        return jax.tree_util.tree_map(lambda p, u: p + u, params, updates), state

    for g in grads:
        params, state = step(params, state, place(g, shard))
    leaf = params["w"]
    assert {s.device for s in leaf.addressable_shards} == set(devices)
    assert leaf.addressable_shards[0].data.shape[0] == leaf.shape[0] // len(devices)
    return jax.tree_util.tree_map(np.asarray, params)


@pytest.mark.parametrize("which", ["adam", "clip+adamw+schedule (charlm)"])
def test_optimiser_over_two_devices_equals_one_device(which):
    from jaxparadigm.optim import adam, chain_for

    tx = adam(1e-2) if which == "adam" else chain_for(load_config(CHARLM).optim)
    rng = np.random.default_rng(0)
    shapes = {"w": (64, 6), "b": (10,), "odd": (7,)}  # "odd" cannot split: replicated
    params = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
    grads = [
        {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()} for _ in range(100)
    ]
    one = _sharded_loop(tx, params, grads, jax.devices()[:1])
    two = _sharded_loop(tx, params, grads, jax.devices()[:2])
    for k in shapes:
        np.testing.assert_allclose(two[k], one[k], rtol=0, atol=1e-6, err_msg=k)
        assert np.abs(one[k] - params[k]).max() > 1e-2, k  # 100 steps moved every leaf


_TRAIN = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from jaxparadigm.app.cpu_devices import cpu_request, prepare_cpu_devices
    from jaxparadigm.config import read_config
    config, out, *overrides = sys.argv[1:]
    cfg, _ = prepare_cpu_devices(cpu_request(None, os.environ), read_config(config, overrides))
    import jax
    from jaxparadigm.build import train_from_config
    from jaxparadigm.train.sharding import to_host
    r = train_from_config(cfg, progress=False, write_plots=False)
    flat = jax.tree_util.tree_flatten_with_path(to_host(r.state.params))[0]
    np.savez(out, losses=np.array(r.losses), devices=jax.device_count(),
             mode=cfg.train.sharding.mode, **{jax.tree_util.keystr(p): x for p, x in flat})
    """
)


@pytest.mark.slow  # two child processes, 100 steps each: 13 + 17 s at load 10 on 2 cores
def test_charlm_100_steps_on_two_devices_equals_one_device(tmp_path):
    """Losses and parameters within 1e-5, except the attention key bias: its exact gradient is
    zero (a constant added to every key's score of a query cancels in the softmax), so its
    computed gradient is rounding noise, which Adam normalises into lr-sized steps; measured
    1 vs 2 devices: key bias 2.9e-3 apart, every other parameter <= 1.8e-7, losses <= 1e-6."""
    overrides = [
        f"out_dir={tmp_path}",
        "model.d_model=32",
        "model.num_layers=1",
        "model.num_heads=2",
        "model.context=16",
        "data.seq_len=16",
        "data.batch_size=8",
        "train.steps=100",
        "train.eval_every=100",
        "train.log_every=100",
        "train.checkpoint.every=0",
    ]
    runs = {}
    for n in (1, 2):
        out = tmp_path / f"run{n}.npz"
        proc = subprocess.run(
            [sys.executable, "-c", _TRAIN, str(CHARLM), str(out), f"name=r{n}", *overrides],
            env=_clean_env(JAXPARADIGM_CPU_DEVICES=str(n)),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[n] = np.load(out)
    one, two = runs[1], runs[2]
    assert (int(one["devices"]), str(one["mode"])) == (1, "none")
    assert (int(two["devices"]), str(two["mode"])) == (2, "data")
    assert one["losses"].shape == (100,) and one["losses"][-1] < one["losses"][0] - 1.0
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5, atol=1e-5)
    d = 32
    for key in [k for k in one.files if k.startswith("[")]:
        a, b = one[key], two[key]
        if key == "['blocks'][0]['attn']['qkv']['bias']":
            a, b = np.delete(a, np.s_[d : 2 * d]), np.delete(b, np.s_[d : 2 * d])
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-5, err_msg=key)


# --- the benches' switch (benchmarks/cpu_devices_rounds.py) --------------------------------------


def _rounds_module():
    import importlib.util

    path = Path(ROOT) / "benchmarks" / "cpu_devices_rounds.py"
    spec = importlib.util.spec_from_file_location("cpu_devices_rounds", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_rounds_rotate_the_order_and_collect_per_runner(monkeypatch):
    rounds = _rounds_module()
    monkeypatch.setattr(rounds, "SETTLE_S", 0.0)
    calls = []

    class Fake:
        def __init__(self, names):
            self.names = names

        def run(self, name, n):
            calls.append(name)
            return {"seconds": [0.5] * n, "check": float(len(calls))}

    got = rounds.alternate([Fake(["a", "b"]), Fake(["t"])], rounds=3, n=2)
    assert calls == ["a", "b", "t", "b", "t", "a", "t", "a", "b"]
    assert got["a"] == {"seconds": [0.5] * 6, "checks": [1.0, 6.0, 8.0]}
    assert rounds.parse_counts("1,2,2,auto") == list(dict.fromkeys([1, 2, cd.usable_cores()]))
    with pytest.raises(InputError, match=r"^--cpu-devices: got '0'"):
        rounds.parse_counts("1,0")


@pytest.mark.slow  # two worker processes (JAX start + compile each)
def test_optim_bench_on_one_and_two_devices_agrees(capsys):
    from types import SimpleNamespace

    rounds = _rounds_module()
    args = SimpleNamespace(
        cpu_devices="1,2", xla_flags=None, no_torch=True, params=3001, leaves=3, reps=2
    )
    result = rounds.optim_rounds(args)
    assert result["params"] == 3000  # three leaves of 1000: each a multiple of 2 devices
    names = {
        "ours adam @1 device",
        "ours triad @1 device",
        "ours adam @2 devices",
        "ours triad @2 devices",
    }
    assert set(result["median_ms"]) == names
    assert result["max_relative_params_sum_difference_vs_first"]["ours adam @2 devices"] < 1e-6
    assert "ours adam @2 devices" in capsys.readouterr().out
