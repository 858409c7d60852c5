"""Guard rollback on injected NaNs, signed checkpoints, bitwise resume and tamper refusal (C5.1).

python examples/guard_and_checkpoints.py
"""

import shutil
import tempfile
from pathlib import Path

import jax
import numpy as np

from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import Checkpointer, CheckpointSignatureError

out = Path(tempfile.mkdtemp())
cfg = config_from_dict(
    {
        "name": "example_guard",
        "out_dir": str(out),
        "model": {"hidden": [32], "num_outputs": 1},
        "data": {"kind": "regression", "n_samples": 512, "batch_size": 32},
        "optim": {"learning_rate": 0.01},
        "train": {"steps": 80, "eval_every": 20, "plots": False, "checkpoint": {"every": 20}},
    }
)


def poison(step, batch):  # steps 41-43 deliver NaN labels
    return {**batch, "y": np.full_like(batch["y"], np.nan)} if 41 <= step <= 43 else batch


hurt = train(cfg, run_dir=out / "hurt", batch_transform=poison, progress=False)
for event in hurt.events:
    print(f"{event.kind:8s} step {event.step}: {event.message}")
print(f"final eval with faults: {hurt.final_eval}")

whole = train(cfg, run_dir=out / "whole", progress=False)
train(cfg, run_dir=out / "cut", stop_at=50, progress=False)  # "crashes" at step 50
resumed = train(cfg, run_dir=out / "cut", progress=False)  # resumes from step 40
same = all(
    np.array_equal(a, b)
    for a, b in zip(jax.tree.leaves(whole.state), jax.tree.leaves(resumed.state), strict=True)
)
print(f"resumed from step {resumed.resumed_from}; bitwise equal to the uninterrupted run: {same}")

other = config_from_dict({"name": "someone_else"})
try:
    Checkpointer(out / "whole" / "checkpoints", other).restore(whole.state)
except CheckpointSignatureError as err:
    print(f"restore under a different config refused: {err}")
shutil.rmtree(out)
