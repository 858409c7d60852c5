"""Where a process joins a multi-process run: config, our variables, SLURM, Kubernetes (issue 14)."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import pytest
import yaml

from jaxparadigm.config import DistributedConfig
from jaxparadigm.errors import InputError
from jaxparadigm.train.distributed import (
    DistributedSpec,
    check_port_free,
    distributed_spec,
    initialize_distributed,
    on_primary,
    parse_coordinator_address,
    process_shard,
)
from tests.train.conftest import tiny_raw

COORD = {"JAXPARADIGM_COORDINATOR_ADDRESS": "10.0.0.1:4321"}


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, None),  # one process
        (
            {**COORD, "JAXPARADIGM_NUM_PROCESSES": "4", "JAXPARADIGM_PROCESS_ID": "3"},
            DistributedSpec("10.0.0.1:4321", 4, 3, "environment"),
        ),
        (  # SLURM: one task per process
            {**COORD, "SLURM_NTASKS": "8", "SLURM_PROCID": "5"},
            DistributedSpec("10.0.0.1:4321", 8, 5, "environment"),
        ),
        (  # Kubernetes Indexed Job: the pod's index is the process id
            {**COORD, "JAXPARADIGM_NUM_PROCESSES": "2", "JOB_COMPLETION_INDEX": "1"},
            DistributedSpec("10.0.0.1:4321", 2, 1, "environment"),
        ),
        (  # our variables win over the scheduler's
            {**COORD, "JAXPARADIGM_NUM_PROCESSES": "2", "SLURM_NTASKS": "9",
             "JAXPARADIGM_PROCESS_ID": "0", "SLURM_PROCID": "7"},
            DistributedSpec("10.0.0.1:4321", 2, 0, "environment"),
        ),
        ({"SLURM_NTASKS": "8", "SLURM_PROCID": "5"}, None),  # no coordinator named: one process
    ],
)  # fmt: skip
def test_spec_from_the_environment(env, expected):
    assert distributed_spec(DistributedConfig(), env) == expected


def test_the_config_wins_over_the_environment():
    cfg = DistributedConfig("host:1", num_processes=3, process_id=2)
    env = {**COORD, "JAXPARADIGM_NUM_PROCESSES": "4", "JAXPARADIGM_PROCESS_ID": "0"}
    assert distributed_spec(cfg, env) == DistributedSpec("host:1", 3, 2, "config")


@pytest.mark.parametrize(
    "env, match",
    [
        ({**COORD, "JAXPARADIGM_PROCESS_ID": "0"}, "none of JAXPARADIGM_NUM_PROCESSES, SLURM_NTASKS"),
        ({**COORD, "SLURM_NTASKS": "2"}, "the process id from one of them"),
        ({**COORD, "SLURM_NTASKS": "two", "SLURM_PROCID": "0"}, "SLURM_NTASKS: got 'two'"),
        ({**COORD, "SLURM_NTASKS": "0", "SLURM_PROCID": "0"}, "SLURM_NTASKS: got '0', expected an integer >= 1"),
        ({**COORD, "SLURM_NTASKS": "2", "SLURM_PROCID": "2"}, "process id: got 2, expected 0 <= id < num_processes=2"),
    ],
)  # fmt: skip
def test_bad_environments_name_the_variable(env, match):
    with pytest.raises(InputError, match=match):
        distributed_spec(DistributedConfig(), env)


def test_single_process_needs_no_initialisation():
    assert initialize_distributed(DistributedConfig(), {}) is False
    assert process_shard() == (0, 1)
    with pytest.raises(InputError, match="process_id: got 3"):
        initialize_distributed(DistributedConfig("localhost:1234", num_processes=2, process_id=3))
    ran = []
    on_primary(lambda: ran.append(1), "test")  # process 0, no barrier in one process
    assert ran == [1]


@pytest.mark.parametrize(
    "address", ["garbage", ":", "host:99999", "host:abc", "host:", ":1234", "host:0", "a b:1",
                "host:1:2", "[::1:80"],
)  # fmt: skip
def test_malformed_coordinator_addresses_name_the_key(address):
    """Issue 24 #15: 'garbage' gave an IndexError, ':' a C++ abort after the init timeout, port
    99999 was accepted."""
    with pytest.raises(InputError, match=r"^train\.distributed\.coordinator_address: got .*port"):
        distributed_spec(DistributedConfig(address, num_processes=2))
    env = {"JAXPARADIGM_COORDINATOR_ADDRESS": address, "JAXPARADIGM_NUM_PROCESSES": "2",
           "JAXPARADIGM_PROCESS_ID": "1"}  # fmt: skip
    with pytest.raises(InputError, match="^environment variable JAXPARADIGM_COORDINATOR_ADDRESS"):
        distributed_spec(DistributedConfig(), env)


def test_well_formed_addresses_parse():
    assert parse_coordinator_address("10.0.0.1:4321", "k") == ("10.0.0.1", 4321)
    assert parse_coordinator_address("[::1]:65535", "k") == ("[::1]", 65535)
    assert parse_coordinator_address("node-3.cluster:1", "k") == ("node-3.cluster", 1)


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_a_busy_coordinator_port_is_refused_before_jax_starts():
    """Issue 24 #15: a busy port gave a JaxRuntimeError, an abort or once a segfault."""
    with _listening() as busy:
        port = busy.getsockname()[1]
        with pytest.raises(InputError, match=f"port {port} is already in use"):
            check_port_free("127.0.0.1", port, "train.distributed.coordinator_address")
        cfg = DistributedConfig(f"127.0.0.1:{port}", 2, 0, initialization_timeout_s=2)
        with pytest.raises(InputError, match="^train.distributed.coordinator_address: port"):
            initialize_distributed(cfg, {})
        assert not jax.distributed.is_initialized()
    check_port_free("127.0.0.1", port, "k")  # free again once closed


@pytest.mark.slow
def test_a_busy_coordinator_port_is_one_cli_line(tmp_path):
    with _listening() as busy:
        port = busy.getsockname()[1]
        raw = tiny_raw(tmp_path, "busy")
        raw["train"]["distributed"] = {
            "coordinator_address": f"127.0.0.1:{port}",
            "num_processes": 2,
            "initialization_timeout_s": 5,
        }
        path = tmp_path / "busy.yaml"
        path.write_text(yaml.safe_dump(raw))
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(Path.cwd())}
        out = subprocess.run(
            [sys.executable, "-m", "jaxparadigm", "run", str(path)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"jaxparadigm run: error: train.distributed.coordinator_address: port {port} is already "
        "in use on this machine; expected a free port for process 0's coordinator (choose another "
        "port, or stop what listens on it)"
    ]
