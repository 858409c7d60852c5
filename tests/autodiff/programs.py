"""Small test programs (MLP, softmax cross-entropy, layer norm, attention) with random inputs.

Shared by the autodiff oracle tests: each program is ``loss(params, batch) -> scalar`` written with
plain jnp, so ``jax.grad`` is an independent reference for our engine.
"""

import jax
import jax.numpy as jnp
import numpy as np


def mlp_loss(params, x):
    """tanh MLP; the loss mixes relu (custom_jvp), log_softmax (jit + stop_gradient) and a mean."""
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return jnp.mean(jax.nn.relu(logits)) + jnp.sum(jax.nn.log_softmax(logits)) / logits.shape[0]


def softmax_xent(params, batch):
    """Mean softmax cross-entropy with integer labels (gather via take_along_axis)."""
    w, b = params
    x, labels = batch
    logits = x @ w + b
    logp = logits - jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))


def layer_norm(params, x, eps=1e-5):
    """sum of squared layer-norm outputs times a weight: exercises mean/var/rsqrt broadcasting."""
    gamma, beta = params
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    y = (x - mu) * jax.lax.rsqrt(var + eps) * gamma + beta
    return jnp.sum(y * jnp.sin(y))


def attention(params, x):
    """Single-head causal self-attention followed by a squared-norm loss."""
    wq, wk, wv = params
    q, k, v = x @ wq, x @ wk, x @ wv
    scores = jnp.einsum("btd,bsd->bts", q, k) / jnp.sqrt(q.shape[-1])
    t = x.shape[1]
    mask = jnp.tril(jnp.ones((t, t), bool))
    scores = jnp.where(mask, scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bts,bsd->btd", probs, v)
    return jnp.mean(out**2) + jnp.max(out)


def make_case(name, seed=0):
    """(loss, params, batch) for one of: mlp, softmax_xent, layer_norm, attention.

    Inputs come from NumPy's generator (eager jax.random would compile a kernel per call).
    """
    rng = np.random.default_rng(seed)

    def n(shape, scale=1.0):
        return jnp.asarray(scale * rng.standard_normal(shape), jnp.float32)

    if name == "mlp":
        sizes = [5, 7, 6, 3]
        params = [
            (n((a, b), 1.0 / np.sqrt(a)), n((b,), 0.1))
            for a, b in zip(sizes[:-1], sizes[1:], strict=True)
        ]
        return mlp_loss, params, n((4, 5))
    if name == "softmax_xent":
        params = (n((6, 4)), n((4,)))
        batch = (n((5, 6)), jnp.asarray(rng.integers(0, 4, size=5), jnp.int32))
        return softmax_xent, params, batch
    if name == "layer_norm":
        params = (1.0 + n((8,), 0.1), n((8,), 0.1))
        return layer_norm, params, n((3, 8))
    if name == "attention":
        params = tuple(n((6, 4), 0.5) for _ in range(3))
        return attention, params, n((2, 5, 6))
    raise ValueError(f"unknown case {name!r}")


CASES = ("mlp", "softmax_xent", "layer_norm", "attention")


def rel_err(a, b):
    """max |a - b| / max |b| over all leaves of two pytrees."""
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    num = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(la, lb, strict=True))
    den = max(float(jnp.max(jnp.abs(y))) for y in lb)
    return num / max(den, 1e-30)
