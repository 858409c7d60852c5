"""``jaxparadigm run`` under a live-buffer sampler: the CLI path's per-device bytes (C4.1, C5.2).

Run as a script in a fresh process with the devices in ``XLA_FLAGS``::

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/train/live_memory_probe.py \\
        CONFIG.yaml [key=value ...]

It calls ``jaxparadigm.cli.main(["run", CONFIG, "--no-progress", *overrides])`` inside a
:class:`~jaxparadigm.train.live_buffers.LiveBufferSampler` (a thread every 5 ms and every return
of a ``jaxparadigm`` function), then prints one JSON line: the sampler's figures, the device
count, the exit status and ``params_bytes`` (the model's parameters, from ``nnx.eval_shape``:
no array of them is made here). :func:`run_probe` is the same from a test (a subprocess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])


def params_bytes(config: str, overrides: list[str]) -> int:
    """Bytes of the parameters of the model ``config`` describes (abstract: no device array)."""
    import jax
    from flax import nnx

    from jaxparadigm.build import build_model
    from jaxparadigm.config import load_config
    from jaxparadigm.train.data import build_dataset

    cfg = load_config(config, overrides)
    dataset = build_dataset(cfg.data, shard=(0, 1))
    abstract = nnx.eval_shape(lambda: build_model(cfg.model, dataset, cfg.train.seed))
    params = nnx.to_pure_dict(nnx.split(abstract)[1])
    return sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(params))


def main(argv: list[str]) -> None:
    import jax

    from jaxparadigm.cli import main as cli_main
    from jaxparadigm.train.live_buffers import LiveBufferSampler

    config, overrides = argv[0], argv[1:]
    with LiveBufferSampler(interval_s=0.005, package="jaxparadigm") as sampler:
        status = cli_main(["run", config, "--no-progress", *overrides])
    out = sampler.figures()
    out.update(
        status=status, devices=jax.device_count(), params_bytes=params_bytes(config, overrides)
    )
    print(json.dumps(out))


def run_probe(config: str | os.PathLike, overrides: list[str], devices: int = 8) -> dict:
    """The probe's JSON of a ``jaxparadigm run`` on ``devices`` forced CPU devices (a subprocess)."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES",)}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=ROOT, TQDM_DISABLE="1")
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    out = subprocess.run(
        [sys.executable, __file__, os.fspath(config), *overrides],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    main(sys.argv[1:])
