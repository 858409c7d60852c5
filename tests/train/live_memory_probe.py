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

The figures of docs/guides/mesh.md are the rows this prints (the configs of
``tests/train/test_live_memory.py``: :func:`write_config` for every model and mode)::

    python tests/train/live_memory_probe.py --table [--tree PATH]

``--tree`` runs another checkout's ``jaxparadigm`` (the sampler's files it lacks,
:data:`SAMPLER_FILES`, are copied in from this one first), e.g. the code before the state was
made in its layout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

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


#: The sampler's module and what it imports, copied into a ``--tree`` that lacks them.
SAMPLER_FILES = (
    "jaxparadigm/train/live_buffers.py",
    "jaxparadigm/common/numbers.py",
    "jaxparadigm/common/errors.py",
    "jaxparadigm/common/quoting.py",
)
#: The models of the test: an MLP on spirals and a 2-layer transformer on pydoc characters.
MODELS = {
    "mlp": {
        "model": {"kind": "mlp", "hidden": [128, 128, 128], "num_outputs": 2},
        "data": {"kind": "spirals", "n_samples": 1024, "noise": 0.05, "batch_size": 64},
        "optim": {"name": "adam", "learning_rate": 0.005},
    },
    "transformer": {
        "model": {
            "kind": "transformer",
            "vocab_size": 256,
            "d_model": 64,
            "num_layers": 2,
            "num_heads": 4,
            "context": 16,
        },
        "data": {"kind": "pydoc_chars", "seq_len": 16, "batch_size": 16},
        "optim": {"name": "adamw", "learning_rate": 0.003},
    },
}
#: The busiest device's share of the state ``3 P`` each mode promises on ``n`` devices.
FORMULA = {"zero1": lambda n: (1 + 2 / n) / 3, "fsdp": lambda n: 1 / n}
FORMULA["fsdp_tensor"] = FORMULA["fsdp"]


def write_config(folder: Path, model: str, mode: str) -> Path:
    """A config in ``folder`` for ``model`` in sharding ``mode`` (``fsdp_tensor``: a 4 x 2 mesh of
    8 devices): 12 steps, evaluations every 4, checkpoints at 6 and 12, a NaN-gradient fault at
    step 8 that rolls the run back to checkpoint 6, every leaf split (``min_size`` 1)."""
    sharding = {"mode": mode, "min_size": 1}
    if mode == "fsdp_tensor":
        sharding["tensor"] = 2
    raw = {
        "name": f"{model}_{mode}",
        "out_dir": str(folder),
        "task": "train",
        **MODELS[model],
        "train": {
            "steps": 12,
            "eval_every": 4,
            "log_every": 4,
            "plots": False,
            "checkpoint": {"every": 6, "keep": 2},
            "guard": {"max_bad_steps": 1},
            "faults": {"nan_grads": [8]},  # one bad step: a rollback to checkpoint step 6
            "sharding": sharding,
        },
    }
    path = folder / f"{model}_{mode}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


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


def run_probe(
    config: str | os.PathLike, overrides: list[str], devices: int = 8, tree: str = ROOT
) -> dict:
    """The probe's JSON of a ``jaxparadigm run`` on ``devices`` forced CPU devices (a subprocess)
    with the ``jaxparadigm`` of the checkout ``tree``."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES",)}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=tree, TQDM_DISABLE="1")
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    out = subprocess.run(
        [sys.executable, __file__, "--tree", tree, os.fspath(config), *overrides],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    refusal = [x for x in out.stderr.splitlines() if "config key 'train.sharding.mode'" in x]
    if out.returncode != 0 and refusal:  # a tree without the mode
        return {"refused": refusal[0].strip(" -")}
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(tree: str) -> None:
    """One Markdown row per model and mode: the formula, the busiest device's share of ``3 P``
    (which device, where), the smallest and largest device peaks, the parameter-shaped copies."""
    for name in SAMPLER_FILES:
        if not Path(tree, name).exists():
            shutil.copy(Path(ROOT, name), Path(tree, name))
    print(
        "| model | mode | formula | busiest: share of 3P (device, where) | device peaks | copies |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for model in MODELS:
            for mode in FORMULA:
                got = run_probe(write_config(Path(folder), model, mode), [], tree=tree)
                if "refused" in got:
                    print(f"| {model} | {mode} | | (no such mode: {got['refused']}) | | |")
                    continue
                n, state = got["devices"], 3 * got["params_bytes"]
                per = got["busiest_per_device"]
                device = max(per, key=lambda d: per[d])
                peaks = [v / state for v in got["peak_per_device"].values()]
                full = {tuple(s) for s in got["shapes"]}
                copies = [c for c in got["copies"] if tuple(c["shape"]) in full]
                print(
                    f"| {model} | {mode} | {FORMULA[mode](n):.3f} | "
                    f"{got['busiest_bytes'] / state:.3f} (device {device}, "
                    f"{got['busiest_where']}) | {min(peaks):.3f}-{max(peaks):.3f} | "
                    f"{len(copies)} |",
                    flush=True,
                )


if __name__ == "__main__":
    args = sys.argv[1:]
    tree = ROOT
    if args[:1] == ["--table"]:
        args = args[1:]
    if args[:1] == ["--tree"]:
        tree, args = str(Path(args[1]).resolve()), args[2:]
    sys.path.insert(0, tree)
    if sys.argv[1:2] == ["--table"]:
        table(tree)
    else:
        main(args)
