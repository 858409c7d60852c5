"""Chapter 4.4 experiment: PyTorch's ``clip_grad_norm_`` vs TF's ``clip_by_global_norm`` (C4.4).

Styles compared on the same gradient trees: optax's own ``clip_by_global_norm`` (the library), TF's
documented formula (``clip_by_global_norm_tf``; TF itself is not run), our port of PyTorch's
formula, per-leaf clipping, and — when installed — PyTorch's real ``clip_grad_norm_`` (with and
without ``error_if_nonfinite``). Cases: norms above and below the threshold, all-zero gradients, an
``inf`` and a ``NaN`` entry, and a data-parallel step whose one shard is NaN before the cross-device
mean (``jax.vmap`` with an axis name and ``lax.pmean``: the collective's semantics, on one device).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxparadigm.claims.figures import bar_chart
from jaxparadigm.claims.ledger import experiment
from jaxparadigm.claims.torch_side import NOT_MEASURED, measured, torch_or_none
from jaxparadigm.optim import (
    clip_by_global_norm_tf,
    clip_by_norm_per_leaf,
    clip_grad_norm_torch,
    global_norm,
)

MAX_NORM = 1.0
SHARDS = 4


def _clip(tx, grads):
    return tx.update(grads, tx.init(grads))[0]


def _flat(tree) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree.leaves(tree)])


def _real_torch(torch, grads, error_if_nonfinite: bool):
    """PyTorch's ``clip_grad_norm_`` on ``grads``: the clipped flat gradient.

    Or, when it raises, the first line of its error.
    """
    ps = [torch.nn.Parameter(torch.zeros(np.asarray(g).shape)) for g in jax.tree.leaves(grads)]
    for p, g in zip(ps, jax.tree.leaves(grads), strict=True):
        p.grad = torch.tensor(np.asarray(g))
    try:
        torch.nn.utils.clip_grad_norm_(ps, MAX_NORM, error_if_nonfinite=error_if_nonfinite)
    except RuntimeError as exc:
        return str(exc).splitlines()[0]
    return np.concatenate([p.grad.numpy().astype(np.float64).ravel() for p in ps])


def _outcome(result) -> str:
    """A clipped gradient as a short outcome label: raised / all NaN / NaN count / finite."""
    if isinstance(result, str):
        return "raised"
    nan = int(np.isnan(result).sum())
    if nan == result.size:
        return "all NaN"
    if nan:
        return f"{nan} of {result.size} NaN"
    return "finite"


def _rel_diff(a: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(a - ref)) / np.max(np.abs(ref)))


def _styles():
    return {
        "optax": optax.clip_by_global_norm(MAX_NORM),
        "tf_documented": clip_by_global_norm_tf(MAX_NORM),
        "torch_formula_port": clip_grad_norm_torch(MAX_NORM),
        "per_leaf": clip_by_norm_per_leaf(MAX_NORM),
    }


def _data_parallel_nan_shard(base):
    """Per-shard gradients (shard 0 NaN), averaged with lax.pmean, then clipped on every shard."""
    shards = jax.tree.map(lambda g: jnp.stack([g * (1.0 + 0.1 * i) for i in range(SHARDS)]), base)
    shards = jax.tree.map(lambda g: g.at[0, 0].set(jnp.nan), shards)
    out = {}
    for name, tx in _styles().items():
        step = jax.vmap(
            lambda g, tx=tx: _clip(tx, jax.lax.pmean(g, axis_name="devices")), axis_name="devices"
        )
        out[name] = _flat(step(shards))
    mean = jax.tree.map(lambda g: jnp.mean(g, axis=0), shards)
    return out, mean


@experiment(
    "C4.4",
    "torch clip_grad_norm_ (per-layer norms aggregated) and TF clip_by_global_norm clip "
    "differently.",
)
def c4_4() -> dict[str, Any]:
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    base = {f"layer{i}": jax.random.normal(k, (64 * (i + 1),)) for i, k in enumerate(keys)}
    torch = torch_or_none()
    ev: dict[str, Any] = {"max_norm": MAX_NORM, "finite": {}, "nonfinite": {}}
    for label, scale in (("above_threshold", 10.0), ("below_threshold", 0.001)):
        grads = jax.tree.map(lambda g, s=scale: g * s, base)
        flat = {k: _flat(_clip(tx, grads)) for k, tx in _styles().items()}
        ref = flat["tf_documented"]
        case = {
            "global_norm_before": float(global_norm(grads)),
            "norm_after": {k: float(np.linalg.norm(v)) for k, v in flat.items()},
            "max_rel_diff_vs_tf": {k: _rel_diff(v, ref) for k, v in flat.items()},
            "real_torch_max_rel_diff_vs_tf": NOT_MEASURED,
        }
        if torch is not None:
            case["real_torch_max_rel_diff_vs_tf"] = _rel_diff(_real_torch(torch, grads, False), ref)
        ev["finite"][label] = case
    nonfinite = {
        "zero": jax.tree.map(jnp.zeros_like, base),
        "inf_entry": {**base, "layer0": base["layer0"].at[0].set(jnp.inf)},
        "nan_entry": {**base, "layer0": base["layer0"].at[0].set(jnp.nan)},
    }
    for label, grads in nonfinite.items():
        results = {k: _flat(_clip(tx, grads)) for k, tx in _styles().items()}
        if torch is not None:
            results["torch"] = _real_torch(torch, grads, False)
            results["torch_error_if_nonfinite"] = _real_torch(torch, grads, True)
        ev["nonfinite"][label] = {k: _outcome(v) for k, v in results.items()}
    dp, mean = _data_parallel_nan_shard(base)
    ev["nonfinite"]["data_parallel_nan_shard"] = {k: _outcome(v) for k, v in dp.items()}
    for case in ev["nonfinite"].values():
        case.setdefault("torch", NOT_MEASURED)
        case.setdefault("torch_error_if_nonfinite", NOT_MEASURED)
    if torch is not None:  # DDP averages before clipping: the real clip then sees the NaN mean
        dp_case = ev["nonfinite"]["data_parallel_nan_shard"]
        dp_case["torch"] = _outcome(_real_torch(torch, mean, False))
        dp_case["torch_error_if_nonfinite"] = _outcome(_real_torch(torch, mean, True))
    above = ev["finite"]["above_threshold"]
    ev["_figures"] = {
        "clip_styles": bar_chart(
            "c4_4_clip_styles.png",
            list(above["norm_after"]),
            list(above["norm_after"].values()),
            f"global norm after clipping to {MAX_NORM} (before: {above['global_norm_before']:.1f})",
            "clipping style",
        )
    }
    return ev


AGREE = 1e-5  # relative difference below which two styles clip alike (torch's eps is 1e-6)


@c4_4.decide
def _(ev):
    """The PyTorch side is real ``clip_grad_norm_`` when measured (our formula port otherwise, which
    can only give ``conditional`` with "PyTorch side not measured"). ``holds`` when PyTorch and TF's
    documented formula differ by more than 1e-5 on finite gradients (a NaN difference shows none);
    ``conditional`` when they agree there but disagree on some non-finite case (zero, inf, NaN,
    NaN shard); ``fails`` when they agree everywhere."""
    torch_measured = all(
        measured(c["real_torch_max_rel_diff_vs_tf"]) for c in ev["finite"].values()
    )
    key = "real_torch_max_rel_diff_vs_tf" if torch_measured else None
    diffs = [
        c[key] if key else c["max_rel_diff_vs_tf"]["torch_formula_port"]
        for c in ev["finite"].values()
    ]
    finite_differ = any(d > AGREE for d in diffs)
    torch_style = "torch" if torch_measured else "torch_formula_port"

    def raises(case) -> bool:
        return case.get("torch_error_if_nonfinite") == "raised"

    def outcomes(case) -> str:
        return (
            f"{'PyTorch' if torch_measured else 'port of PyTorch'} {case[torch_style]}"
            + (" (raises with error_if_nonfinite)" if raises(case) else "")
            + f", TF {case['tf_documented']}, optax {case['optax']}"
        )

    cases = ev["nonfinite"]
    disagree = [k for k, c in cases.items() if c[torch_style] != c["tf_documented"] or raises(c)]
    styles_differ = {  # every case where the three styles do not all agree
        k: outcomes(c)
        for k, c in cases.items()
        if k in disagree or c["optax"] != c["tf_documented"]
    }
    per_leaf = ev["finite"]["above_threshold"]["max_rel_diff_vs_tf"]["per_leaf"]
    who = "PyTorch's clip_grad_norm_" if torch_measured else "Our port of PyTorch's formula"
    finite = (
        f"{who} and TF's documented formula differ by up to {max(diffs):.1e} on finite gradients"
    )
    nonfinite = (
        "; ".join(f"{label}: {text}" for label, text in styles_differ.items())
        if styles_differ
        else "none"
    )
    tail = (
        f" Non-finite cases where the styles differ: {nonfinite}. Per-leaf clipping, a different "
        f"paradigm, differs by {per_leaf:.0%}."
    )
    if not torch_measured:
        return "conditional", f"PyTorch side not measured. {finite}.{tail}"
    if finite_differ:
        return "holds", f"{finite}.{tail}"
    if disagree:
        return "conditional", (
            f"Same paradigm on finite gradients: both scale by one global L2 norm ({finite}, "
            f"within torch's eps). They differ only where the norm is not finite.{tail}"
        )
    return "fails", f"Same paradigm: {finite}, and on every non-finite case.{tail}"
