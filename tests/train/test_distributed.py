"""Where a process joins a multi-process run: config, our variables, SLURM, Kubernetes (issue 14)."""

import pytest

from jaxparadigm.config import DistributedConfig
from jaxparadigm.errors import InputError
from jaxparadigm.train.distributed import (
    DistributedSpec,
    distributed_spec,
    initialize_distributed,
    on_primary,
    process_shard,
)

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
