"""Hypothesis strategy of optimiser chains (issue 23, items 3b and 5).

A spec is a plain dict:

* ``clip``: none, optax's global norm, TF's global norm, per-leaf norm, or PyTorch's
  ``clip_grad_norm_`` (drawn only when torch is installed: torch is its oracle), with bounds that
  include 0, a negative bound and ``inf``, as optax and torch take them;
* ``lr``: a number or a schedule (constant, linear, polynomial, cosine, warmup-cosine, join with
  the right or a wrong number of boundaries, PyTorch's ``linear_lr`` with ``total_iters`` <= 0 or
  fractional); values sometimes negative and step counts sometimes fractional, as optax allows;
* ``name``: adam / adamw / sgd / adam_torch (``adam_torch_style``), with the values optax takes
  and we used to refuse: ``b1``/``b2`` outside ``[0, 1)``, ``eps <= 0``, negative ``eps_root``,
  negative or > 1 momentum, momentum None, Nesterov without momentum, NAdam (Adam's
  ``nesterov``), negative or scheduled
  weight decay, a weight-decay mask, ``mu_dtype``/``accumulator_dtype`` (float64 included).
  ``adam_torch`` (drawn only when torch is installed: torch.optim.Adam is its oracle) draws only
  what torch.optim.Adam accepts (its documented refusals are torch's);
* ``dtype`` of the params (float32 / bfloat16), ``inject`` (``inject_hyperparams``), ``jit``;
* ``loss_scale``: None or ``(log2 init_scale, growth_interval, overflow_step)``: the gradients
  are scaled by ``S`` and unscaled by ``dynamic_loss_scale`` before our chain; at
  ``overflow_step`` (if any) one gradient entry is ``inf`` and the step is skipped;
* ``seed`` and ``shapes``: a random pytree of 1-3 small leaves (shapes from ``SHAPES``).

``tests/optim/chain_oracles.py`` turns a spec into our chain and into its oracle.
"""

from __future__ import annotations

import importlib.util

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

HAS_TORCH = importlib.util.find_spec("torch") is not None
INF = float("inf")

_value = st.sampled_from([0.0, 1e-3, 0.01, 0.05, 0.1, 0.3, -0.01])
_steps = st.sampled_from([-2, -1, 0, 1, 2, 3, 4, 5, 6, 2.5])
_rate = st.sampled_from([1e-3, 0.01, 0.1, -0.01])
SHAPES = [(), (3,), (2, 3), (1, 2)]


@st.composite
def schedule_specs(draw, non_negative: bool = False) -> tuple:
    """A learning rate: ``("number", lr)`` or a schedule's kind and arguments."""
    kinds = ["number", "constant", "linear", "poly", "cosine", "wcd", "join", "linear_lr"]
    kind = draw(st.sampled_from(kinds))
    if kind == "number":
        rate = draw(_rate)
        return ("number", abs(rate) if non_negative else rate)
    if kind == "constant":
        return ("constant", draw(_value))
    if kind == "linear":
        return (
            "linear",
            draw(_value),
            draw(_value),
            draw(_steps),
            draw(st.sampled_from([-1, 0, 2])),
        )
    if kind == "poly":
        power = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))
        return ("poly", draw(_value), draw(_value), power, draw(_steps), draw(st.integers(-1, 2)))
    if kind == "cosine":
        alpha = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0, 1.5]))
        exponent = draw(st.sampled_from([1.0, 2.0, 0.5]))
        steps = draw(st.sampled_from([1, 2, 3, 6, 2.5]))
        return ("cosine", draw(_value), steps, alpha, exponent)
    if kind == "wcd":
        warmup = draw(st.integers(-1, 3))
        decay = warmup + draw(st.integers(1, 5))
        return ("wcd", draw(_value), draw(_value), warmup, decay, draw(_value))
    if kind == "linear_lr":
        base = draw(st.sampled_from([0.01, 0.1, 0.3]))
        start = draw(st.sampled_from([1.0 / 3.0, 0.5, 1.0]))
        end = draw(st.sampled_from([0.0, 0.5, 1.0]))
        iters = draw(st.sampled_from([1, 2, 3, 5, 0, -1, 0.5, 2.5]))
        return ("linear_lr", base, start, end, iters)
    # join: constant, then linear; 0-2 boundaries (one is right, optax's zip drops the rest).
    boundaries = tuple(draw(st.lists(st.integers(-2, 4), min_size=0, max_size=2)))
    return ("join", draw(_value), draw(_value), boundaries)


def _clip_specs() -> st.SearchStrategy:
    bounds = st.sampled_from([0.5, 0.5, 10.0, 0.0, -1.0, INF])
    styles = ["global", "tf", "leaf"] + (["torch"] if HAS_TORCH else [])
    some = st.tuples(st.sampled_from(styles), bounds).map(
        # TF's formula is c * min(1/n, 1/c): inf gives NaN there (TF too), so TF draws finite bounds.
        lambda c: (c[0], 0.5) if c == ("tf", INF) else c
    )
    return st.one_of(st.none(), some)


@st.composite
def chain_specs(draw) -> dict:
    name = draw(st.sampled_from(["adam", "adamw", "sgd"] + (["adam_torch"] if HAS_TORCH else [])))
    spec = {
        "clip": draw(_clip_specs()),
        "lr": draw(schedule_specs(non_negative=name == "adam_torch")),
        "name": name,
        "dtype": draw(st.sampled_from(["float32", "float32", "bfloat16"])),
        "inject": name != "adam_torch" and draw(st.integers(0, 3)) == 0,
        "jit": draw(st.integers(0, 7)) == 0,
        "seed": draw(st.integers(0, 2**16)),
        # Leaf shapes from a small menu: the chains are elementwise after one norm, and each new
        # shape costs every eager op a compilation (the suite's budget is a few seconds).
        "shapes": draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3)),
        "loss_scale": draw(
            st.one_of(
                st.none(),
                st.none(),
                st.tuples(st.integers(0, 8), st.integers(1, 3), st.sampled_from([None, 0, 1, 2])),
            )
        ),
    }
    if name in ("adam", "adamw"):
        spec["mu_dtype"] = draw(
            st.sampled_from([None, None, "float32", "bfloat16", "complex64", "float64"])
        )
        # Values that make a step ill-conditioned (b2 < 0 lets v cross 0, eps < 0 the
        # denominator; sqrt and 1/x then amplify any rounding) are drawn in float32 only, where
        # ours and optax run the same op sequence: the bfloat16 rule bounds rounding in ulps.
        low = "bfloat16" in (spec["dtype"], spec["mu_dtype"])
        spec["b1"] = draw(st.sampled_from([0.9, 0.0, 0.5] + ([] if low else [0.9, -0.2, 1.0, 1.3])))
        spec["b2"] = draw(st.sampled_from([0.999, 0.9, 0.0] + ([] if low else [0.999, -0.5, 1.0])))
        spec["eps"] = draw(st.sampled_from([1e-8, 1e-3] + ([] if low else [1e-8, 0.0, -1e-4])))
        spec["eps_root"] = draw(st.sampled_from([0.0, 1e-8] + ([] if low else [0.0, -1e-10])))
        spec["nesterov"] = draw(st.integers(0, 3)) == 0  # NAdam
        if name == "adamw":
            spec["weight_decay"] = draw(
                st.sampled_from([0.0, 1e-4, 0.1, -0.05, ("linear", 0.1, -0.05, 2)])
            )
            n = len(spec["shapes"])
            spec["mask"] = draw(
                st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n))
            )
    elif name == "sgd":
        momentum = draw(st.sampled_from([None, 0.0, 0.5, 0.9, -0.5, 1.2]))
        spec["momentum"] = momentum
        spec["nesterov"] = draw(st.booleans())
        spec["weight_decay"] = draw(st.sampled_from([0.0, 0.0, 1e-3, 0.1, -0.01]))
        spec["accumulator_dtype"] = (
            draw(st.sampled_from([None, None, "float32", "bfloat16", "float64"]))
            if momentum
            else None
        )
    else:  # adam_torch: torch.optim.Adam's own bounds (0 <= b < 1, 0 <= eps, 0 <= wd)
        spec["b1"] = draw(st.sampled_from([0.9, 0.0, 0.5]))
        spec["b2"] = draw(st.sampled_from([0.999, 0.9, 0.0]))
        spec["eps"] = draw(st.sampled_from([1e-8, 1e-3, 0.0]))
        spec["weight_decay"] = draw(st.sampled_from([0.0, 0.0, 0.01]))
    return spec


def make_tree(spec: dict, salt: int) -> dict:
    rng = np.random.default_rng(spec["seed"] + salt)
    return {
        f"w{i}": jnp.asarray(rng.normal(size=shape), spec["dtype"])
        for i, shape in enumerate(spec["shapes"])
    }
