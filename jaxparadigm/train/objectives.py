"""Training objectives and evaluation metrics, one per data kind (C5.1).

* spirals (classification): ``mean_i -log softmax(f(x_i))[y_i]``; metric accuracy.
* regression: ``mean_i ||f(x_i) - y_i||^2``; metric MSE.
* pydoc_chars (next byte): ``mean_{i,t} -log softmax(f(tokens_{i,<=t}))[tokens_{i,t+1}]``; metric
  bits per byte ``= loss / ln 2``.

Each objective is ``loss(model, batch, rng) -> float32 scalar`` on an NNX module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import optax

#: An NNX module called as ``model(inputs, ...) -> outputs``; a batch: named arrays.
Model = Callable[..., jax.Array]
Batch = Mapping[str, jax.Array]

__all__ = [
    "classification_loss",
    "eval_metrics",
    "loss_for",
    "next_byte_loss",
    "regression_loss",
]


def classification_loss(model: Model, batch: Batch, rng: jax.Array | None = None) -> jax.Array:
    """Mean softmax cross-entropy with integer labels (C5.1)."""
    logits = model(batch["x"])
    return optax.softmax_cross_entropy_with_integer_labels(logits, batch["y"]).mean()


def regression_loss(model: Model, batch: Batch, rng: jax.Array | None = None) -> jax.Array:
    """Mean squared error ``mean ||f(x) - y||^2`` (C5.1)."""
    return jnp.mean(jnp.sum((model(batch["x"]) - batch["y"]) ** 2, axis=-1))


def next_byte_loss(model: Model, batch: Batch, rng: jax.Array | None = None) -> jax.Array:
    """Mean next-byte cross-entropy over ``tokens[:, :-1] -> tokens[:, 1:]`` (C5.1).

    ``rng`` (when given) drives the model's dropout.
    """
    tokens = batch["tokens"]
    logits = model(tokens[:, :-1], dropout_rng=rng)
    return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()


_LOSSES: dict[str, Callable] = {
    "spirals": classification_loss,
    "regression": regression_loss,
    "pydoc_chars": next_byte_loss,
}


def loss_for(kind: str) -> Callable:
    """The objective for a data kind (``spirals``, ``regression``, ``pydoc_chars``)."""
    if kind not in _LOSSES:
        raise ValueError(f"data kind: got {kind!r}, expected one of {', '.join(_LOSSES)}")
    return _LOSSES[kind]


def eval_metrics(kind: str, model: Model, batch: Batch) -> dict[str, jax.Array]:
    """``{"loss": ..., <metric>: ...}`` for one evaluation batch (no dropout) (C5.1)."""
    loss = loss_for(kind)(model, batch, None)
    if kind == "spirals":
        acc = jnp.mean((jnp.argmax(model(batch["x"]), -1) == batch["y"]).astype(jnp.float32))
        return {"loss": loss, "accuracy": acc}
    if kind == "pydoc_chars":
        return {"loss": loss, "bits_per_byte": loss / jnp.log(2.0)}
    return {"loss": loss, "mse": loss}
