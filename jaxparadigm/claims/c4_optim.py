"""Chapter 4 experiments: the SGD step (C4.1), Adam's moment dtypes (C4.2), counter overflow (C4.3);
clipping (C4.4) is in ``c4_clipping``. Our ``jaxparadigm.optim`` runs; optax and (when installed)
PyTorch are the references. Without torch the PyTorch fields read ``"not measured"``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxparadigm.claims.evidence.adam_moments import nu_storage_evidence
from jaxparadigm.claims.evidence.overflow import overflow_evidence
from jaxparadigm.claims.figures import bar_chart, line_chart
from jaxparadigm.claims.ledger import experiment
from jaxparadigm.claims.torch_side import NOT_MEASURED, measured, torch_or_none
from jaxparadigm.optim import adam, sgd
from jaxparadigm.optim.schedules.overflow import INT32_MAX

# --- C4.1 ------------------------------------------------------------------------------------


def _apply(tx, params, grads, steps=1):
    state = tx.init(params)
    for _ in range(steps):
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params


@experiment(
    "C4.1",
    "An SGD step is p <- p - lr*grad, outside gradient tracking, skipping params without a "
    "gradient.",
)
def c4_1() -> dict[str, Any]:
    lr, wd = 0.1, 0.01
    params = {"used": jnp.array([1.0, -2.0, 3.0]), "unused": jnp.array([0.5, 0.5])}
    grads = {"used": jnp.array([0.3, 0.1, -0.2]), "unused": jnp.zeros(2)}  # jax.grad gives zeros
    plain = _apply(sgd(lr), params, grads)
    formula = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    decayed = _apply(sgd(lr, weight_decay=wd), params, grads)
    momentum = _apply(sgd(lr, momentum=0.9, weight_decay=wd), params, grads, steps=3)
    ev: dict[str, Any] = {
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
    ev.update(
        torch_unused_grad_is_none=NOT_MEASURED,
        torch_unused_moved=NOT_MEASURED,
        torch_used_diff_vs_ours=NOT_MEASURED,
    )
    torch = torch_or_none()
    if torch is not None:  # a parameter that took no part in the loss has grad None and is skipped
        used = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
        unused = torch.nn.Parameter(torch.tensor([0.5, 0.5]))
        opt = torch.optim.SGD([used, unused], lr=lr, weight_decay=wd)
        (used * torch.tensor([0.3, 0.1, -0.2])).sum().backward()
        opt.step()
        ev["torch_unused_grad_is_none"] = unused.grad is None
        ev["torch_unused_moved"] = float((unused.detach() - 0.5).abs().max())
        ev["torch_used_diff_vs_ours"] = float(
            (used.detach() - torch.tensor(np.asarray(decayed["used"]))).abs().max()
        )
    return ev


@c4_1.decide
def _(ev):
    """``fails`` when our step differs from p - lr*g by more than 1e-6, PyTorch's step (measured)
    differs from ours by more than 1e-6, or PyTorch moved a parameter whose grad is None (NaN
    fails). Otherwise, with PyTorch measured: ``holds`` when an unused parameter also stays put in
    functional JAX with weight decay, ``conditional`` when it moves there (skipping needs a None
    gradient). Without torch: ``conditional`` ("PyTorch side not measured")."""
    if not ev["max_abs_error_vs_formula"] <= 1e-6:
        return "fails", (
            f"Our SGD step differs from p - lr*g by {ev['max_abs_error_vs_formula']:.2e}."
        )
    moved = ev["zero_grad_param_moved_with_weight_decay"]
    jax_moves = not moved == 0.0
    jax_part = (
        "In functional JAX every parameter gets a gradient (zeros), so weight decay still moves an "
        f"unused parameter by {moved:.1e} (momentum, 3 steps: "
        f"{ev['zero_grad_param_moved_with_momentum_3_steps']:.1e})."
        if jax_moves
        else "In functional JAX an unused parameter (zero gradient) stayed put too."
    )
    if ev["sgd_is_differentiable_function"] is True:
        jax_part += (
            " No 'no_grad' is needed: the update is a pure function (itself differentiable)."
        )
    torch_fields = ("torch_unused_grad_is_none", "torch_unused_moved", "torch_used_diff_vs_ours")
    if not all(measured(ev[k]) for k in torch_fields):
        return "conditional", (
            f"p <- p - lr*g holds exactly in ours (error {ev['max_abs_error_vs_formula']:.1e}). "
            f"PyTorch side not measured: its skipping of parameters without a gradient is "
            f"undecided. {jax_part}"
        )
    diff, torch_moved = ev["torch_used_diff_vs_ours"], ev["torch_unused_moved"]
    skipped = ev["torch_unused_grad_is_none"] is True and torch_moved == 0.0
    if not diff <= 1e-6 or not skipped:
        return "fails", (
            f"PyTorch's SGD step differs from p - lr*g by {diff:.1e}; its unused parameter had "
            f"grad None: {ev['torch_unused_grad_is_none']} and moved by {torch_moved:.1e}."
        )
    torch_part = (
        f"PyTorch's step equals ours within {diff:.1e} and skipped the unused parameter (grad "
        f"None, moved {torch_moved:.1e})."
    )
    if jax_moves:
        return "conditional", (
            "p <- p - lr*g holds exactly; but 'skipping parameters without a gradient' exists only "
            f"where a gradient can be None. {torch_part} {jax_part}"
        )
    return "holds", f"p <- p - lr*g holds exactly. {torch_part} {jax_part}"


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
    "Mixed-precision Adam keeps exp_avg in float32 and exp_avg_sq in float16, saving memory "
    "without harm.",
)
def c4_2() -> dict[str, Any]:
    key = jax.random.PRNGKey(0)
    params = {"w": jnp.zeros((4096,), jnp.float32)}
    scales = jnp.logspace(-6, -1, 4096)  # gradients spanning five decades, as in real networks
    grads_seq = [{"w": jax.random.normal(k, (4096,)) * scales} for k in jax.random.split(key, 20)]
    ref, _ = _adam_run(None, grads_seq, params)
    ev: dict[str, Any] = {"adam_steps": len(grads_seq)}
    for name in ("float32", "bfloat16", "float16"):
        p, state = _adam_run(name, grads_seq, params)
        dev = float(jnp.max(jnp.abs(p["w"] - ref["w"])) / jnp.max(jnp.abs(ref["w"])))
        ev[f"nu_{name}"] = {**nu_storage_evidence(state), "max_param_deviation_vs_fp32": dev}
    for dtype in ("float32", "float16"):
        ev[f"torch_{dtype}_params_state_dtypes"] = NOT_MEASURED
    torch = torch_or_none()
    if torch is not None:  # what torch.optim.Adam actually stores, for fp32 (AMP) and fp16 params
        for dtype in ("float32", "float16"):
            p = torch.nn.Parameter(torch.ones(8, dtype=getattr(torch, dtype)))
            opt = torch.optim.Adam([p], lr=1e-3)
            p.grad = torch.full_like(p, 1e-3)
            opt.step()
            st = opt.state[p]
            ev[f"torch_{dtype}_params_state_dtypes"] = [
                str(st["exp_avg"].dtype).removeprefix("torch."),
                str(st["exp_avg_sq"].dtype).removeprefix("torch."),
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


HARM = 0.01  # a final parameter error above 1% of the largest fp32 parameter is harm


@c4_2.decide
def _(ev):
    """``fails`` when float16 nu saves no memory against float32, or does harm: some entries
    underflowed to zero AND the parameters after ``adam_steps`` steps deviate from fp32 Adam by more
    than 1% (NaN counts as harm). Otherwise ``fails`` when PyTorch (measured) stores both moments in
    one dtype (the article's layout is not PyTorch's), ``holds`` when it stores exp_avg_sq in a
    narrower dtype than exp_avg, and ``conditional`` ("PyTorch side not measured") without torch."""
    fp32, bf16, fp16 = ev["nu_float32"], ev["nu_bfloat16"], ev["nu_float16"]
    harmless = fp16["nu_underflow_fraction"] == 0 or fp16["max_param_deviation_vs_fp32"] <= HARM
    saves = fp16["nu_bytes"] < fp32["nu_bytes"]
    layouts = {d: ev[f"torch_{d}_params_state_dtypes"] for d in ("float32", "float16")}
    torch_measured = all(measured(v) for v in layouts.values())
    torch_part = (
        f" PyTorch's Adam stores (exp_avg, exp_avg_sq) as {tuple(layouts['float32'])} for fp32 "
        f"parameters and {tuple(layouts['float16'])} for fp16 parameters."
        if torch_measured
        else " PyTorch side not measured."
    )
    if not saves:
        return "fails", (
            f"float16 nu saved no memory ({fp32['nu_bytes']} B -> {fp16['nu_bytes']} "
            f"B).{torch_part}"
        )
    if not harmless:
        return "fails", (
            f"float16 nu halves its bytes ({fp32['nu_bytes']} -> {fp16['nu_bytes']}) but "
            f"{fp16['nu_underflow_fraction']:.1%} of entries underflowed to zero, and after "
            f"{ev['adam_steps']} steps the largest parameter error vs fp32 Adam is "
            f"{fp16['max_param_deviation_vs_fp32']:.3g}x the largest fp32 parameter; bfloat16 nu "
            f"({bf16['nu_underflow_fraction']:.1%} underflow, error "
            f"{bf16['max_param_deviation_vs_fp32']:.2g}x) keeps fp32's range.{torch_part}"
        )
    no_harm = (
        f"float16 nu saved memory ({fp32['nu_bytes']} -> {fp16['nu_bytes']} B) with "
        f"{fp16['nu_underflow_fraction']:.1%} underflow and "
        f"{fp16['max_param_deviation_vs_fp32']:.2%} deviation."
    )
    if not torch_measured:
        return "conditional", no_harm + torch_part
    mixed = [d for d, (mu, nu) in layouts.items() if mu != nu]
    if mixed:
        return "holds", no_harm + torch_part
    return "fails", no_harm + torch_part + " That is not the article's mixed layout."


# --- C4.3 ------------------------------------------------------------------------------------


@experiment(
    "C4.3",
    "A warmup scheduler's step counter overflows past 2^31-1 and turns the lr negative (LinearLR); "
    "TF is protected.",
)
def c4_3() -> dict[str, Any]:
    base, start, end, total = 1e-3, 1.0 / 3.0, 1.0, 5
    demo, torch_lr, torch_last_epoch = overflow_evidence(
        window=4,
        base_lr=base,
        start_factor=start,
        end_factor=end,
        total_iters=total,
        with_torch=torch_or_none() is not None,
    )
    wrapped = jnp.asarray(demo.naive_count, jnp.int32)
    # TF's documented PolynomialDecay clips the step to [0, decay_steps]; optax's
    # polynomial_schedule (a library we did not write) implements the same documented formula. TF
    # itself is not run.
    tf_formula = optax.polynomial_schedule(1e-3, 1e-5, 1.0, 1000)
    ev: dict[str, Any] = {
        "int32_max": INT32_MAX,
        "steps": list(demo.steps),
        "naive_int32_count": list(demo.naive_count),
        "safe_int32_count": list(demo.safe_count),
        "lr_linear_formula_on_naive_counter": list(demo.lr_unclamped),
        "lr_safe_counter": list(demo.lr_safe),
        "tf_documented_polynomial_on_naive_counter": [
            float(v) for v in np.asarray(tf_formula(wrapped))
        ],
        "tf_documented_polynomial_at_true_step": float(tf_formula(1000)),
        "torch_linear_lr": NOT_MEASURED,
        "torch_last_epoch": NOT_MEASURED,
    }
    if torch_lr is not None and torch_last_epoch is not None:
        ev["torch_linear_lr"] = list(torch_lr)
        ev["torch_last_epoch"] = list(torch_last_epoch)
    series = {
        "linear formula, naive int32": demo.lr_unclamped,
        "safe_increment int32": demo.lr_safe,
    }
    if torch_lr is not None:
        series["torch LinearLR"] = torch_lr
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
    """PyTorch measured: ``holds`` when LinearLR's lr went below 0 past int32_max; otherwise
    ``conditional`` when a naive int32 counter (as in XLA/JAX) wraps and the linear formula goes
    negative there, ``fails`` when even that stays non-negative. Without torch: ``conditional``
    ("PyTorch side not measured"). A NaN lr is not negative. The TF half is TF's documented formula
    (run through optax.polynomial_schedule), never TF itself."""
    naive_lr = ev["lr_linear_formula_on_naive_counter"]
    naive_negative = min(naive_lr) < 0
    naive = (
        f"A naive int32 counter (as in XLA/JAX) wraps to {min(ev['naive_int32_count'])} past "
        f"{ev['int32_max']}, and the linear warmup formula on it gives lr {min(naive_lr):.3g}."
        if naive_negative
        else "Even a naive int32 counter kept the linear warmup lr at or above "
        f"{min(naive_lr):.3g}."
    )
    tf = ev["tf_documented_polynomial_on_naive_counter"]
    tf_part = (
        " TF's documented PolynomialDecay clips the count, so on the wrapped counter its lr stays "
        f"in {min(tf):.3g}..{max(tf):.3g}: no negative rate, but it silently restarts the decay "
        f"(at the true step it would be {ev['tf_documented_polynomial_at_true_step']:.3g})."
    )
    safe = ev["lr_safe_counter"]
    if min(safe) >= 0 and min(ev["safe_int32_count"]) > 0:
        tf_part += f" safe_increment (saturating) keeps the lr at {min(safe):.3g}."
    torch_lr = ev["torch_linear_lr"]
    if not measured(torch_lr):
        return "conditional", f"PyTorch side not measured. {naive}{tf_part}"
    if min(torch_lr) < 0:
        return (
            "holds",
            f"PyTorch's LinearLR lr went to {min(torch_lr):.3g} past {ev['int32_max']}. "
            f"{naive}{tf_part}",
        )
    torch_part = (
        f"PyTorch's LinearLR counts with a Python int (last_epoch reached "
        f"{max(ev['torch_last_epoch'])}, past {ev['int32_max']}) and its lr stayed at or above "
        f"{min(torch_lr):.3g}."
    )
    if naive_negative:
        return (
            "conditional",
            f"False for PyTorch: {torch_part} True for int32 counters. {naive}{tf_part}",
        )
    return "fails", f"{torch_part} {naive}{tf_part}"
