"""C1.2 measured: for L2-normalised embeddings ``q . d`` is the cosine, not an approximation."""

from __future__ import annotations

import numpy as np

from jaxparadigm.retrieval.index.memory_index import SemanticIndex

__all__ = ["dot_vs_cosine"]


def dot_vs_cosine(index: SemanticIndex, queries: list[str], n_raw: int = 8) -> dict:
    """C1.2: ``q . d`` equals the cosine for normalised embeddings; measured, with the raw case.

    The unnormalised check uses the first ``n_raw`` queries and documents without the final L2
    normalisation: their norms, max ``|dot - cosine|`` and how often dot and cosine pick the same
    top doc.
    """
    q = index.encoder.encode(queries, normalize=True).astype(np.float64)
    d = index.embeddings.astype(np.float64)
    cos = (q @ d.T) / np.outer(np.linalg.norm(q, axis=1), np.linalg.norm(d, axis=1))
    dot32 = index.embeddings @ q.astype(np.float32).T
    raw = index.encoder.encode(queries[:n_raw], normalize=False).astype(np.float64)
    raw_d = index.encoder.encode(index.docs[:n_raw], normalize=False).astype(np.float64)
    raw_dot = raw @ raw_d.T
    raw_cos = raw_dot / np.outer(np.linalg.norm(raw, axis=1), np.linalg.norm(raw_d, axis=1))
    norms = np.concatenate([np.linalg.norm(raw, axis=1), np.linalg.norm(raw_d, axis=1)])
    return {
        "max_abs_dot_minus_cos_normalized": float(np.max(np.abs(dot32.T - cos))),
        "max_abs_norm_minus_1": float(np.max(np.abs(np.linalg.norm(d, axis=1) - 1.0))),
        "unnormalized_norm_range": [float(norms.min()), float(norms.max())],
        "max_abs_dot_minus_cos_unnormalized": float(np.max(np.abs(raw_dot - raw_cos))),
        "unnormalized_top1_agreement": float(
            np.mean(np.argmax(raw_dot, axis=1) == np.argmax(raw_cos, axis=1))
        ),
    }
