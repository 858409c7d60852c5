"""Issue 12, s.4: ``train.grad: jaxparadigm`` trains on our own autodiff engine with jax's curves.

Both shipped configs (at tiny sizes) are trained for 200 steps with ``train.grad: jax`` and with
``train.grad: jaxparadigm``; the per-step losses agree to 1e-5 relative.
"""

from pathlib import Path

import numpy as np
import pytest
from flax import nnx

from jaxparadigm.build import build_model
from jaxparadigm.config import load_config
from jaxparadigm.optim import chain_for, schedule_for
from jaxparadigm.train.data import build_dataset
from jaxparadigm.train.objectives import loss_for
from jaxparadigm.train.train_step import init_train_state, make_train_step

STEPS = 200
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TINY = {
    "mlp_spirals.yaml": [
        "model.hidden=[16,16]",
        "data.n_samples=256",
        "data.batch_size=32",
    ],
    "charlm_pydoc.yaml": [
        "model.d_model=16",
        "model.num_layers=1",
        "model.num_heads=2",
        "model.context=16",
        "data.seq_len=16",
        "data.batch_size=4",
    ],
}


def _loss_curve(path: str, grad: str) -> np.ndarray:
    cfg = load_config(CONFIGS / path, [*TINY[path], f"train.grad={grad}"])
    assert cfg.train.grad == grad
    dataset = build_dataset(cfg.data)
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, cfg.train.seed))
    tx = chain_for(cfg.optim)
    state = init_train_state(nnx.to_pure_dict(variables), tx, cfg.train.seed)
    step = make_train_step(
        graphdef,
        loss_for(dataset.kind),
        tx,
        lr_fn=schedule_for(cfg.optim),
        guard=cfg.train.guard.enabled,
        grad=cfg.train.grad,
    )
    losses = []
    for i in range(STEPS):
        state, metrics = step(state, dataset.batch(i))
        losses.append(float(metrics["loss"]))
    return np.asarray(losses)


@pytest.mark.parametrize("path", list(TINY))
def test_loss_curves_equal_jax_within_1e_5_relative(path):
    ref = _loss_curve(path, "jax")
    ours = _loss_curve(path, "jaxparadigm")
    assert np.all(np.isfinite(ref)) and ref[-1] < ref[0]  # the run trains
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=0)


def test_grad_engine_key_defaults_to_jax_and_is_checked(tmp_path):
    assert load_config(CONFIGS / "mlp_spirals.yaml").train.grad == "jax"
    with pytest.raises(ValueError, match=r"train\.grad"):
        load_config(CONFIGS / "mlp_spirals.yaml", ["train.grad=torch"])
    with pytest.raises(ValueError, match="grad: got 'torch'"):
        make_train_step(
            None,
            lambda m, b, r: 0.0,
            chain_for(load_config(CONFIGS / "mlp_spirals.yaml").optim),
            grad="torch",
        )
