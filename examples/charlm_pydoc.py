"""A byte-level transformer LM on Python's own pydoc topics, then greedy sampling from it.

python examples/charlm_pydoc.py [steps]
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxparadigm.build import build_model
from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import load_config
from jaxparadigm.train.data import build_dataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
config_path = Path(__file__).resolve().parent.parent / "configs" / "charlm_pydoc.yaml"
cfg = load_config(
    config_path, [f"train.steps={steps}", "name=example_charlm", "train.checkpoint.resume=false"]
)
result = train(cfg)
print(f"eval bits/byte after {steps} steps: {result.final_eval['bits_per_byte']:.3f}")

# Rebuild the module from the trained params and continue a prompt greedily. The input is always
# one full context window (right-padded while short): causal attention means padding after
# position i does not change the logits at i, and a fixed shape compiles once.
graphdef, _ = nnx.split(build_model(cfg.model, build_dataset(cfg.data), cfg.train.seed))
forward = jax.jit(lambda params, window: nnx.merge(graphdef, params)(window))
tokens = list(b"The for statement ")
ctx = cfg.model.context
for _ in range(120):
    recent = tokens[-ctx:]
    window = jnp.asarray([recent + [0] * (ctx - len(recent))], jnp.int32)
    logits = forward(result.state.params, window)
    tokens.append(int(np.argmax(logits[0, len(recent) - 1])))
print(bytes(tokens).decode("utf-8", errors="replace"))
