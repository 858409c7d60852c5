"""Data-parallel sharding: 8 forced CPU devices give the single-device loss curve (C5.2)."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec

from jaxparadigm.train.distributed import initialize_distributed
from jaxparadigm.train.sharding import data_mesh, replicate, shard_batch

_CHILD = textwrap.dedent(
    """
    import json, sys
    import jax
    sys.path.insert(0, sys.argv[2])
    from conftest import tiny_config
    from jaxparadigm.train.loop import train
    assert jax.device_count() == 8, jax.devices()
    curves = {}
    for mode in ("none", "data"):
        cfg = tiny_config(sys.argv[1], name=mode, train={"steps": 8, "sharding": {"mode": mode}})
        r = train(cfg, progress=False)
        spec = r.state.params["head"]["kernel"].sharding
        curves[mode] = {"losses": r.losses, "eval": r.final_eval["loss"],
                        "devices": len(spec.device_set)}
    print(json.dumps(curves))
    """
)


def test_eight_device_loss_curve_equals_single_device(tmp_path):
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
    }
    here = os.path.dirname(__file__)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path), here],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    curves = json.loads(out.stdout.strip().splitlines()[-1])
    single, sharded = curves["none"], curves["data"]
    assert single["devices"] == 1 and sharded["devices"] == 8
    assert len(single["losses"]) == len(sharded["losses"]) == 8
    np.testing.assert_allclose(sharded["losses"], single["losses"], rtol=0, atol=1e-5)
    assert abs(sharded["eval"] - single["eval"]) < 1e-5
    assert single["losses"][-1] < single["losses"][0]  # it trained


def test_replicate_and_shard_batch_in_process():
    mesh = data_mesh()
    n = jax.device_count()
    batch = shard_batch({"x": np.zeros((2 * n, 3), np.float32)}, mesh)
    assert batch["x"].sharding.spec == PartitionSpec("data")
    assert len(batch["x"].addressable_shards) == n
    assert batch["x"].addressable_shards[0].data.shape == (2, 3)
    rep = replicate({"w": np.ones(3)}, mesh)
    assert rep["w"].sharding.spec == PartitionSpec()


def test_bad_sharding_inputs():
    mesh = data_mesh()
    if jax.device_count() > 1:
        with pytest.raises(ValueError, match=r"batch\['x'\]: got shape \(\d+, 2\)"):
            shard_batch({"x": np.zeros((jax.device_count() + 1, 2))}, mesh)
    with pytest.raises(ValueError, match="devices: got an empty list"):
        data_mesh([])


def test_distributed_is_off_without_coordinator():
    from jaxparadigm.config import DistributedConfig

    assert initialize_distributed(DistributedConfig()) is False
    with pytest.raises(ValueError, match="process_id: got 3"):
        initialize_distributed(DistributedConfig("localhost:1234", num_processes=2, process_id=3))
