"""Issue 12, s.4: the MiniLM encoder's gradient runs through our engine and matches jax.grad.

A contrastive (InfoNCE) loss on three sentence pairs, embedded by the real all-MiniLM-L6-v2
(``load_minilm``, no network): ``grad`` w.r.t. every encoder parameter, ours vs ``jax.grad``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxparadigm.autodiff import value_and_grad
from jaxparadigm.models.bert import l2_normalize, mean_pool
from jaxparadigm.retrieval import load_minilm

PAIRS = [
    ("How do I sort a list in Python?", "Use sorted() or list.sort()."),
    ("The cat sat on the mat.", "A cat is sitting on a rug."),
    ("Stock prices fell sharply today.", "The market dropped."),
]


@pytest.fixture(scope="module")
def contrastive_loss():
    encoder = load_minilm()
    graphdef, state = nnx.split(encoder.model)
    params = nnx.to_pure_dict(state)
    tok = encoder.tokenize([q for q, _ in PAIRS] + [d for _, d in PAIRS])
    ids = jnp.asarray(tok["input_ids"], jnp.int32)
    mask = jnp.asarray(tok["attention_mask"], jnp.int32)
    n = len(PAIRS)

    def loss(params):
        hidden = nnx.merge(graphdef, params)(ids, mask)
        emb = l2_normalize(mean_pool(hidden, mask))
        logits = emb[:n] @ emb[n:].T / 0.05
        return -jnp.mean(jnp.diagonal(jax.nn.log_softmax(logits, axis=-1)))

    return loss, params


@pytest.mark.slow
def test_minilm_contrastive_gradient_matches_jax(contrastive_loss):
    loss, params = contrastive_loss
    value, ours = jax.jit(value_and_grad(loss))(params)
    ref_value, ref = jax.jit(jax.value_and_grad(loss))(params)
    np.testing.assert_allclose(value, ref_value, rtol=1e-6)
    leaves, ref_leaves = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)
    assert len(leaves) == len(ref_leaves) == len(jax.tree_util.tree_leaves(params)) == 77
    scale = max(float(jnp.max(jnp.abs(r))) for r in ref_leaves)
    worst = max(float(jnp.max(jnp.abs(a - r))) for a, r in zip(leaves, ref_leaves, strict=True))
    assert worst / scale < 1e-5, worst / scale
    assert all(bool(jnp.any(r != 0)) for r in ref_leaves)
