"""``jaxparadigm run`` under a live-buffer sampler: the CLI path's per-device bytes (C4.1, C5.2).

Run as a script in a fresh process with the devices in ``XLA_FLAGS``::

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/train/live_memory_probe.py \\
        CONFIG.yaml [key=value ...]

It calls ``jaxparadigm.cli.main(["run", CONFIG, "--no-progress", *overrides])`` inside a
:class:`~jaxparadigm.train.live_buffers.LiveBufferSampler` (a sample at every return of a
function of the run's code or of orbax's array serialization (:data:`PACKAGES`); with ``PROBE_THREAD_S=0.005`` also a background thread's,
which races with donation: see the sampler), then prints one JSON line: the sampler's figures, the device
count, the exit status, ``params_bytes`` and ``shapes`` (the model's parameters, from
``nnx.eval_shape``: no array of them is made here). :func:`run_probe` is the same from a test (a subprocess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
#: Where samples are taken: every return of a function of the modules that run a training run
#: from the command line (set-up, each stage of a step, rollback, checkpoint save and restore,
#: evaluation, the report) and of orbax's transfer of each replica slice to the host (where a
#: checkpoint's arrays are staged for writing). Not the models' and optimisers' functions: they run inside the traced step.
PACKAGES = (
    "jaxparadigm.app.train_task",
    "jaxparadigm.build",
    "jaxparadigm.train.checkpoint",
    "jaxparadigm.train.initial_state",
    "jaxparadigm.train.rollback",
    "jaxparadigm.train.step_stages",
    "jaxparadigm.train.train_loop",
    "orbax.checkpoint._src.serialization.replica_slices:async_transfer_slice",
)


def model_params(config: str, overrides: list[str]) -> tuple[int, list[list[int]]]:
    """``(bytes, shapes)`` of the parameters of the model ``config`` describes (from
    ``nnx.eval_shape``: no array of them is made)."""
    import jax
    from flax import nnx

    from jaxparadigm.build import build_model
    from jaxparadigm.config import load_config
    from jaxparadigm.train.data import build_dataset

    cfg = load_config(config, overrides)
    dataset = build_dataset(cfg.data, shard=(0, 1))
    abstract = nnx.eval_shape(lambda: build_model(cfg.model, dataset, cfg.train.seed))
    leaves = jax.tree_util.tree_leaves(nnx.to_pure_dict(nnx.split(abstract)[1]))
    shapes = sorted({tuple(x.shape) for x in leaves})
    return sum(x.size * x.dtype.itemsize for x in leaves), [list(s) for s in shapes]


def main(argv: list[str]) -> None:
    import jax

    from jaxparadigm.cli import main as cli_main
    from jaxparadigm.train.live_buffers import LiveBufferSampler

    config, overrides = argv[0], argv[1:]
    interval = float(os.environ.get("PROBE_THREAD_S", "0")) or None  # the racy thread: off
    with LiveBufferSampler(interval, packages=PACKAGES) as sampler:
        status = cli_main(["run", config, "--no-progress", *overrides])
    out = sampler.figures()
    nbytes, shapes = model_params(config, overrides)
    out.update(status=status, devices=jax.device_count(), params_bytes=nbytes, shapes=shapes)
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
