"""``prepare_cpu_devices`` in this process (issue 39): the environment it is given is the one it
changes, the user's own count wins, a running backend refuses an explicit other count, and a
sharding mode the user set is kept. The earlier tests ran it in child processes, where a mutant
of it never showed (``make mutation MODULE=app.cpu_devices``).
"""

import os
from pathlib import Path

import pytest

from jaxparadigm.app import cpu_devices as cd
from jaxparadigm.config import read_config
from jaxparadigm.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
CHARLM = ROOT / "configs" / "charlm_pydoc.yaml"


@pytest.fixture
def no_backend(monkeypatch):
    """As before JAX starts (this test process has its backend running)."""
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: None)


def _request(n):
    return cd.CpuRequest(n, "--cpu-devices", str(n))


def test_the_given_environment_is_changed_not_the_process_one(no_backend):
    before = dict(os.environ)
    env = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
    cfg, notes = cd.prepare_cpu_devices(_request(2), read_config(CHARLM), env)
    assert "--xla_force_host_platform_device_count=2" in env["XLA_FLAGS"]
    assert "--xla_cpu_enable_fast_math=false" in env["XLA_FLAGS"]
    assert dict(os.environ) == before
    assert cfg.train.sharding.mode == "data" and any("train.sharding.mode=data" in n for n in notes)


def test_a_mode_the_user_set_is_kept(no_backend):
    loaded = read_config(CHARLM, ["train.sharding.mode=none"])
    env: dict[str, str] = {}
    cfg, notes = cd.prepare_cpu_devices(_request(2), loaded, env)
    assert cfg.train.sharding.mode == "none" and notes == ()
    assert "--xla_force_host_platform_device_count=2" in env["XLA_FLAGS"]


def test_the_users_own_count_wins(no_backend):
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
    cfg, notes = cd.prepare_cpu_devices(_request(2), read_config(CHARLM), env)
    assert env == {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
    assert notes == (
        "--cpu-devices 2: not applied, XLA_FLAGS --xla_force_host_platform_device_count already "
        "sets 3 (the user's setting wins)",
    )
    assert cfg.train.sharding.mode == read_config(CHARLM).config.train.sharding.mode


def test_a_running_backend_refuses_an_explicit_other_count(monkeypatch):
    monkeypatch.setattr(cd, "running_cpu_devices", lambda: 4)
    env: dict[str, str] = {}
    with pytest.raises(InputError, match="JAX already runs in this process with 4 CPU device"):
        cd.prepare_cpu_devices(_request(2), read_config(CHARLM), env)
    assert env == {}
