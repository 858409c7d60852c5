"""Hypothesis strategy of optimiser chains and the same chain in optax (issue 23, item 3b).

A spec is a plain dict: a clip style (none / global norm / TF's global norm / per-leaf norm),
a learning rate (a number, or a schedule: constant, linear, polynomial, cosine, warmup-cosine,
join; values sometimes negative, as optax allows), an optimiser (adam / adamw / sgd with
momentum, Nesterov, weight decay and ``accumulator_dtype``), ``mu_dtype``, the params dtype (float32 / bfloat16), whether
the optimiser is wrapped in ``inject_hyperparams``, whether the step is jitted, and a random
pytree of 1-3 small leaves. ``build_ours``/``build_optax`` turn a spec into the two chains.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import optax
from hypothesis import strategies as st

import jaxparadigm.optim as ours
from jaxparadigm.optim import schedules as S

_value = st.sampled_from([0.0, 1e-3, 0.01, 0.05, 0.1, 0.3, -0.01])
_steps = st.integers(-2, 6)


@st.composite
def schedule_specs(draw) -> tuple:
    kind = draw(st.sampled_from(["number", "constant", "linear", "poly", "cosine", "wcd", "join"]))
    if kind == "number":
        return ("number", draw(st.sampled_from([1e-3, 0.01, 0.1, -0.01])))
    if kind == "constant":
        return ("constant", draw(_value))
    if kind == "linear":
        return ("linear", draw(_value), draw(_value), draw(_steps), draw(st.integers(-1, 2)))
    if kind == "poly":
        power = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))
        return ("poly", draw(_value), draw(_value), power, draw(_steps), draw(st.integers(-1, 2)))
    if kind == "cosine":
        alpha = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0, 1.5]))
        exponent = draw(st.sampled_from([1.0, 2.0, 0.5]))
        return ("cosine", draw(_value), draw(st.integers(1, 6)), alpha, exponent)
    if kind == "wcd":
        warmup = draw(st.integers(-1, 3))
        decay = warmup + draw(st.integers(1, 5))
        return ("wcd", draw(_value), draw(_value), warmup, decay, draw(_value))
    return ("join", draw(_value), draw(_value), draw(st.integers(-2, 4)))


def build_schedule(spec: tuple, lib: str):
    """The schedule of ``spec`` in ``lib`` ('ours' or 'optax')."""
    kind, *a = spec
    if kind == "number":
        return a[0]
    if lib == "ours":
        table = {
            "constant": lambda: S.constant(*a),
            "linear": lambda: S.linear(*a),
            "poly": lambda: S.polynomial(a[0], a[1], a[2], a[3], a[4]),
            "cosine": lambda: S.cosine_decay(*a),
            "wcd": lambda: S.warmup_cosine_decay(*a),
            "join": lambda: S.join([S.constant(a[0]), S.linear(a[0], a[1], 3)], [a[2]]),
        }
    else:
        table = {
            "constant": lambda: optax.constant_schedule(*a),
            "linear": lambda: optax.linear_schedule(*a),
            "poly": lambda: optax.polynomial_schedule(a[0], a[1], a[2], a[3], a[4]),
            "cosine": lambda: optax.cosine_decay_schedule(*a),
            "wcd": lambda: optax.warmup_cosine_decay_schedule(*a),
            "join": lambda: optax.join_schedules(
                [optax.constant_schedule(a[0]), optax.linear_schedule(a[0], a[1], 3)], [a[2]]
            ),
        }
    return table[kind]()


@st.composite
def chain_specs(draw) -> dict:
    name = draw(st.sampled_from(["adam", "adamw", "sgd"]))
    spec = {
        "clip": draw(
            st.sampled_from([None, ("global", 0.5), ("global", 10.0), ("tf", 0.5), ("leaf", 0.3)])
        ),
        "lr": draw(schedule_specs()),
        "name": name,
        "dtype": draw(st.sampled_from(["float32", "float32", "bfloat16"])),
        "inject": draw(st.integers(0, 3)) == 0,
        "jit": draw(st.integers(0, 7)) == 0,
        "seed": draw(st.integers(0, 2**16)),
        "shapes": draw(
            st.lists(
                st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
                min_size=1,
                max_size=3,
            )
        ),
    }
    if name in ("adam", "adamw"):
        spec["b1"] = draw(st.sampled_from([0.9, 0.0, 0.5]))
        spec["b2"] = draw(st.sampled_from([0.999, 0.9, 0.0]))
        spec["eps"] = draw(st.sampled_from([1e-8, 1e-3]))
        spec["eps_root"] = draw(st.sampled_from([0.0, 1e-8]))
        spec["mu_dtype"] = draw(st.sampled_from([None, None, "float32", "bfloat16", "complex64"]))
        if name == "adamw":
            spec["weight_decay"] = draw(st.sampled_from([0.0, 1e-4, 0.1]))
    else:
        momentum = draw(st.sampled_from([0.0, 0.5, 0.9]))
        spec["momentum"] = momentum
        spec["nesterov"] = momentum > 0 and draw(st.booleans())
        spec["weight_decay"] = draw(st.sampled_from([0.0, 0.0, 1e-3, 0.1]))
        spec["accumulator_dtype"] = (
            draw(st.sampled_from([None, None, "float32", "bfloat16"])) if momentum else None
        )
    return spec


def make_tree(spec: dict, salt: int) -> dict:
    rng = np.random.default_rng(spec["seed"] + salt)
    return {
        f"w{i}": jnp.asarray(rng.normal(size=shape), spec["dtype"])
        for i, shape in enumerate(spec["shapes"])
    }


def _clip(spec: dict, lib: str):
    clip = spec["clip"]
    if clip is None:
        return None
    style, m = clip
    if lib == "ours":
        return {
            "global": ours.clip_by_global_norm,
            "tf": ours.clip_by_global_norm_tf,
            "leaf": ours.clip_by_norm_per_leaf,
        }[style](m)
    if style in ("global", "tf"):  # TF's formula gives optax's result (up to rounding)
        return optax.clip_by_global_norm(m)
    labels = {f"w{i}": f"w{i}" for i in range(len(spec["shapes"]))}  # one global norm per leaf
    return optax.multi_transform({k: optax.clip_by_global_norm(m) for k in labels}, labels)


def build_ours(spec: dict):
    lr = build_schedule(spec["lr"], "ours")
    name = spec["name"]
    factory = getattr(ours, name)
    if spec["inject"]:
        factory = ours.inject_hyperparams(factory)
    if name == "sgd":
        opt = factory(
            lr,
            spec["momentum"],
            spec["nesterov"],
            spec["weight_decay"],
            accumulator_dtype=spec["accumulator_dtype"],
        )
    else:
        kw = {k: spec[k] for k in ("b1", "b2", "eps", "eps_root", "mu_dtype")}
        if name == "adamw":
            kw["weight_decay"] = spec["weight_decay"]
        opt = factory(lr, **kw)
    clip = _clip(spec, "ours")
    return opt if clip is None else optax.chain(clip, opt)


def build_optax(spec: dict):
    """The oracle: optax's own chain (static hyper-parameters; optax's inject_hyperparams drifts
    in the last bit, optax #583, and ours promises the static optimiser's values)."""
    lr = build_schedule(spec["lr"], "optax")
    name = spec["name"]
    if name == "sgd":
        momentum = spec["momentum"] or None
        opt = optax.sgd(lr, momentum, spec["nesterov"], spec["accumulator_dtype"])
        if spec["weight_decay"]:  # torch-style L2 before the momentum
            opt = optax.chain(optax.add_decayed_weights(spec["weight_decay"]), opt)
    else:
        kw = {k: spec[k] for k in ("b1", "b2", "eps", "eps_root", "mu_dtype")}
        if name == "adamw":
            kw["weight_decay"] = spec["weight_decay"]
        opt = getattr(optax, name)(lr, **kw)
    clip = _clip(spec, "optax")
    return opt if clip is None else optax.chain(clip, opt)
