"""Chapter 4 experiments: the SGD step (C4.1), Adam's moment dtypes (C4.2), counter overflow (C4.3),
clipping paradigms (C4.4). Our ``jaxparadigm.optim`` runs; optax and (when installed) PyTorch are the
references."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxparadigm.claims.figures import bar_chart, line_chart
from jaxparadigm.claims.ledger import experiment
from jaxparadigm.claims.torch_side import torch_or_none
from jaxparadigm.optim import (
    adam,
    adam_state_report,
    clip_by_global_norm,
    clip_by_global_norm_tf,
    clip_by_norm_per_leaf,
    clip_grad_norm_torch,
    global_norm,
    sgd,
)
from jaxparadigm.optim.schedules import overflow_demo, polynomial

# --- C4.1 ------------------------------------------------------------------------------------


def _apply(tx, params, grads, steps=1):
    state = tx.init(params)
    for _ in range(steps):
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params


@experiment(
    "C4.1",
    "An SGD step is p <- p - lr*grad, outside gradient tracking, skipping params without a gradient.",
)
def c4_1():
    lr, wd = 0.1, 0.01
    params = {"used": jnp.array([1.0, -2.0, 3.0]), "unused": jnp.array([0.5, 0.5])}
    grads = {"used": jnp.array([0.3, 0.1, -0.2]), "unused": jnp.zeros(2)}  # jax.grad gives zeros
    plain = _apply(sgd(lr), params, grads)
    formula = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    decayed = _apply(sgd(lr, weight_decay=wd), params, grads)
    momentum = _apply(sgd(lr, momentum=0.9, weight_decay=wd), params, grads, steps=3)
    ev = {
        "max_abs_error_vs_formula": float(
            max(
                jnp.max(jnp.abs(a - b))
                for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(formula), strict=True)
            )
        ),
        "zero_grad_param_moved_with_weight_decay": float(
            jnp.max(jnp.abs(decayed["unused"] - params["unused"]))
        ),
        "zero_grad_param_moved_with_momentum_3_steps": float(
            jnp.max(jnp.abs(momentum["unused"] - params["unused"]))
        ),
        "sgd_is_differentiable_function": bool(
            np.isfinite(
                jax.grad(lambda p: jnp.sum(_apply(sgd(lr), {"u": p}, {"u": p})["u"]))(
                    params["used"]
                )
            ).all()
        ),
    }
    torch = torch_or_none()
    if torch is not None:  # a parameter that took no part in the loss has grad None and is skipped
        used = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
        unused = torch.nn.Parameter(torch.tensor([0.5, 0.5]))
        opt = torch.optim.SGD([used, unused], lr=lr, weight_decay=wd)
        (used * torch.tensor([0.3, 0.1, -0.2])).sum().backward()
        opt.step()
        ev["torch_unused_grad_is_none"] = unused.grad is None
        ev["torch_unused_moved"] = float((unused.detach() - 0.5).abs().max())
        ev["torch_used_matches_ours"] = float(
            (used.detach() - torch.tensor(np.asarray(decayed["used"]))).abs().max()
        )
    return ev


@c4_1.decide
def _(ev):
    if ev["max_abs_error_vs_formula"] > 1e-6:
        return (
            "fails",
            f"our SGD step differs from p - lr*g by {ev['max_abs_error_vs_formula']:.2e}.",
        )
    moved = ev["zero_grad_param_moved_with_weight_decay"] > 0
    torch_part = ""
    if "torch_unused_moved" in ev:
        torch_part = f" PyTorch skipped the unused parameter (grad None, moved {ev['torch_unused_moved']:.1e})."
    if moved:
        return "conditional", (
            "p <- p - lr*g holds exactly; but 'skipping parameters without a gradient' exists only "
            "where a gradient can be None (PyTorch)." + torch_part + " In functional JAX every "
            "parameter gets a gradient (zeros), so weight decay still moves an unused parameter by "
            f"{ev['zero_grad_param_moved_with_weight_decay']:.1e} (momentum, 3 steps: "
            f"{ev['zero_grad_param_moved_with_momentum_3_steps']:.1e}); and no 'no_grad' is needed: "
            "the update is a pure function (itself differentiable)."
        )
    return (
        "holds",
        "p <- p - lr*g holds exactly and parameters with zero gradient stay put." + torch_part,
    )


# --- C4.2 ------------------------------------------------------------------------------------


def _adam_run(nu_dtype, grads_seq, params):
    tx = adam(1e-3, nu_dtype=nu_dtype)
    state = tx.init(params)
    for g in grads_seq:
        updates, state = tx.update(g, state, params)
        params = optax.apply_updates(params, updates)
    return params, state


@experiment(
    "C4.2",
    "Mixed-precision Adam keeps exp_avg in float32 and exp_avg_sq in float16, saving memory without harm.",
)
def c4_2():
    key = jax.random.PRNGKey(0)
    params = {"w": jnp.zeros((4096,), jnp.float32)}
    scales = jnp.logspace(-6, -1, 4096)  # gradients spanning five decades, as in real networks
    grads_seq = [{"w": jax.random.normal(k, (4096,)) * scales} for k in jax.random.split(key, 20)]
    ref, _ = _adam_run(None, grads_seq, params)
    ev = {}
    for name in ("float32", "bfloat16", "float16"):
        p, state = _adam_run(name, grads_seq, params)
        rep = adam_state_report(state)
        dev = float(jnp.max(jnp.abs(p["w"] - ref["w"])) / jnp.max(jnp.abs(ref["w"])))
        ev[f"nu_{name}"] = {
            "mu_dtype": rep["mu"]["dtype"],
            "nu_bytes": rep["nu"]["bytes"],
            "nu_underflow_fraction": rep["nu"]["underflow_fraction"],
            "max_param_deviation_vs_fp32": dev,
        }
    torch = torch_or_none()
    if torch is not None:  # what torch.optim.Adam actually stores, for fp32 (AMP) and fp16 params
        for dtype in ("float32", "float16"):
            p = torch.nn.Parameter(torch.ones(8, dtype=getattr(torch, dtype)))
            opt = torch.optim.Adam([p], lr=1e-3)
            p.grad = torch.full_like(p, 1e-3)
            opt.step()
            st = opt.state[p]
            ev[f"torch_{dtype}_params_state_dtypes"] = [
                str(st["exp_avg"].dtype),
                str(st["exp_avg_sq"].dtype),
            ]
    names = ["float32", "bfloat16", "float16"]
    ev["_figures"] = {
        "nu_underflow": bar_chart(
            "c4_2_nu_underflow.png",
            names,
            [ev[f"nu_{n}"]["nu_underflow_fraction"] for n in names],
            "fraction of Adam nu entries that underflowed to 0",
            "nu storage dtype",
        )
    }
    return ev


@c4_2.decide
def _(ev):
    fp16 = ev["nu_float16"]
    harm = fp16["nu_underflow_fraction"] > 0 and fp16["max_param_deviation_vs_fp32"] > 0.01
    torch_mixed = [
        v for k, v in ev.items() if k.startswith("torch_") and isinstance(v, list) and v[0] != v[1]
    ]
    torch_part = ""
    if any(k.startswith("torch_") for k in ev):
        torch_part = (
            " PyTorch's Adam stores both moments in the parameter dtype "
            f"(fp32 params: {ev.get('torch_float32_params_state_dtypes')}, fp16 params: "
            f"{ev.get('torch_float16_params_state_dtypes')})."
        )
    if harm:
        return "fails", (
            f"float16 nu halves its bytes ({ev['nu_float32']['nu_bytes']} -> {fp16['nu_bytes']}) but "
            f"{fp16['nu_underflow_fraction']:.1%} of entries underflowed to 0, and after 20 steps the "
            f"largest parameter error vs fp32 Adam is {fp16['max_param_deviation_vs_fp32']:.3g}x the "
            f"largest fp32 parameter; bfloat16 nu ({ev['nu_bfloat16']['nu_underflow_fraction']:.1%} "
            f"underflow, error {ev['nu_bfloat16']['max_param_deviation_vs_fp32']:.2g}x) is the safe choice."
            + torch_part
        )
    if torch_part and not torch_mixed:
        return (
            "fails",
            "float16 nu did no measurable harm here, but the storage layout is not PyTorch's."
            + torch_part,
        )
    return "holds", (
        f"float16 nu saved memory with {fp16['nu_underflow_fraction']:.1%} underflow and "
        f"{fp16['max_param_deviation_vs_fp32']:.2%} deviation." + torch_part
    )


# --- C4.3 ------------------------------------------------------------------------------------


@experiment(
    "C4.3",
    "A warmup scheduler's step counter overflows past 2^31-1 and turns the lr negative (LinearLR); TF is protected.",
)
def c4_3():
    base, start, end, total = 1e-3, 1.0 / 3.0, 1.0, 5
    demo = overflow_demo(
        window=4,
        base_lr=base,
        start_factor=start,
        end_factor=end,
        total_iters=total,
        with_torch=torch_or_none() is not None,
    )
    wrapped = jnp.asarray(demo.naive_count, jnp.int32)
    # PyTorch's LinearLR closed form on its Python-int counter (unbounded, so it cannot wrap):
    # the same formula as on the naive counter, only the counter differs.
    python_int_formula = [
        base * (start + (end - start) * min(total, t) / total) for t in demo.steps
    ]
    poly = polynomial(
        1e-3, 1e-5, 1.0, 1000
    )  # TF PolynomialDecay semantics: count clipped to [0, N]
    ev = {
        "steps": list(demo.steps),
        "naive_int32_count": list(demo.naive_count),
        "safe_int32_count": list(demo.safe_count),
        "lr_linear_formula_on_naive_counter": list(demo.lr_unclamped),
        "lr_safe_counter": list(demo.lr_safe),
        "python_int_counter": list(demo.steps),
        "lr_linear_formula_on_python_int_counter": python_int_formula,
        "polynomial_on_naive_counter": [float(v) for v in np.asarray(poly(wrapped))],
        "polynomial_at_true_step": float(poly(1000)),
    }
    if demo.torch_lr is not None:
        ev["torch_linear_lr"] = list(demo.torch_lr)
        ev["torch_last_epoch"] = list(demo.torch_last_epoch)
    series = {
        "linear formula, naive int32": demo.lr_unclamped,
        "safe_increment int32": demo.lr_safe,
    }
    if demo.torch_lr is not None:
        series["torch LinearLR"] = demo.torch_lr
    ev["_figures"] = {
        "lr_near_int32_max": line_chart(
            "c4_3_lr_near_int32_max.png",
            [s - 2**31 for s in demo.steps],
            series,
            "learning rate around step 2**31 (x = step - 2**31)",
            "step - 2**31",
            "lr",
        )
    }
    return ev


@c4_3.decide
def _(ev):
    naive_negative = min(ev["lr_linear_formula_on_naive_counter"]) < 0
    safe_ok = min(ev["lr_safe_counter"]) >= 0 and min(ev["safe_int32_count"]) > 0
    if "torch_linear_lr" in ev:
        torch_negative = min(ev["torch_linear_lr"]) < 0
        torch_part = (
            f"PyTorch's LinearLR counts with a Python int (last_epoch reached "
            f"{max(ev['torch_last_epoch'])}) and its lr stayed {min(ev['torch_linear_lr']):.3g}"
        )
    else:
        torch_negative = min(ev["lr_linear_formula_on_python_int_counter"]) < 0
        torch_part = (
            f"PyTorch not installed; its LinearLR formula on a Python-int counter (reaching "
            f"{max(ev['python_int_counter'])}, no wrap) gives lr "
            f"{min(ev['lr_linear_formula_on_python_int_counter']):.3g}"
        )
    if torch_negative:
        return "holds", f"{torch_part}: the lr went negative past 2**31-1."
    if not naive_negative:
        return "fails", f"{torch_part}, and even a naive int32 counter kept the lr non-negative."
    tf_like = ev["polynomial_on_naive_counter"]
    return "conditional", (
        f"False for PyTorch: {torch_part}. True for a naive int32 counter (as in XLA/JAX): it wraps to "
        f"{min(ev['naive_int32_count'])} and the linear warmup formula gives lr "
        f"{min(ev['lr_linear_formula_on_naive_counter']):.3g}. TF-style clipping of the count is no real "
        f"protection: on the wrapped counter PolynomialDecay silently restarts at {max(tf_like):.3g}. "
        "safe_increment (saturating) keeps the lr at its final value"
        + ("." if safe_ok else " -- NOT observed.")
    )


# --- C4.4 ------------------------------------------------------------------------------------


def _clip(tx, grads):
    return tx.update(grads, tx.init(grads))[0]


@experiment(
    "C4.4",
    "torch clip_grad_norm_ (per-layer norms aggregated) and TF clip_by_global_norm clip differently.",
)
def c4_4():
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    base = {f"layer{i}": jax.random.normal(k, (64 * (i + 1),)) for i, k in enumerate(keys)}
    ev = {"cases": {}}
    for label, scale in (("above_threshold", 10.0), ("below_threshold", 0.001)):
        grads = jax.tree.map(lambda g, s=scale: g * s, base)
        out = {
            "torch_style": _clip(clip_grad_norm_torch(1.0), grads),
            "tf_style": _clip(clip_by_global_norm_tf(1.0), grads),
            "optax_style": _clip(clip_by_global_norm(1.0), grads),
            "per_leaf": _clip(clip_by_norm_per_leaf(1.0), grads),
        }
        flat = {
            k: np.concatenate([np.asarray(x) for x in jax.tree.leaves(v)]) for k, v in out.items()
        }
        ref = flat["tf_style"]
        case = {
            "global_norm_before": float(global_norm(grads)),
            "norm_after": {k: float(np.linalg.norm(v)) for k, v in flat.items()},
            "max_rel_diff_vs_tf": {
                k: float(np.max(np.abs(v - ref)) / np.max(np.abs(ref))) for k, v in flat.items()
            },
        }
        torch = torch_or_none()
        if torch is not None:
            ps = [
                torch.nn.Parameter(torch.zeros(np.asarray(g).shape)) for g in jax.tree.leaves(grads)
            ]
            for p, g in zip(ps, jax.tree.leaves(grads), strict=True):
                p.grad = torch.tensor(np.asarray(g))
            torch.nn.utils.clip_grad_norm_(ps, 1.0)
            real = np.concatenate([p.grad.numpy() for p in ps])
            case["real_torch_max_rel_diff_vs_ours"] = float(
                np.max(np.abs(real - flat["torch_style"])) / np.max(np.abs(real))
            )
            case["real_torch_max_rel_diff_vs_tf"] = float(
                np.max(np.abs(real - ref)) / np.max(np.abs(ref))
            )
        ev["cases"][label] = case
    above = ev["cases"]["above_threshold"]["norm_after"]
    ev["_figures"] = {
        "clip_styles": bar_chart(
            "c4_4_clip_styles.png",
            list(above),
            list(above.values()),
            f"global norm after clipping to 1.0 (before: {ev['cases']['above_threshold']['global_norm_before']:.1f})",
            "clipping style",
        )
    }
    return ev


@c4_4.decide
def _(ev):
    torch_vs_tf = max(
        max(c["max_rel_diff_vs_tf"]["torch_style"], c.get("real_torch_max_rel_diff_vs_tf", 0.0))
        for c in ev["cases"].values()
    )
    per_leaf = ev["cases"]["above_threshold"]["max_rel_diff_vs_tf"]["per_leaf"]
    if torch_vs_tf < 1e-5:
        return "fails", (
            f"Same paradigm: both compute one global L2 norm (torch's 'norm of per-layer norms' is the "
            f"global norm) and scale every gradient by one factor; they differ by at most "
            f"{torch_vs_tf:.1e} (torch's eps=1e-6). A genuinely different paradigm is per-leaf "
            f"clipping, which differs by {per_leaf:.0%}."
        )
    return (
        "holds",
        f"torch-style and TF-style clipping differ by up to {torch_vs_tf:.1e} (relative).",
    )
