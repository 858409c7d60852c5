"""A generated optimiser-chain spec (``chain_generator.py``) as our chain and as its oracle.

Oracles, each independent of our code:

* optax's own transformations for everything optax has (``adam``/``adamw``/``sgd``, schedules,
  ``clip_by_global_norm``, per-leaf clipping as ``multi_transform`` of it, masks);
* ``torch.nn.utils.clip_grad_norm_`` itself (through ``jax.pure_callback``) for our torch-style
  clipping; TF's formula ``c * min(1/n, 1/c)`` equals optax's clipping for ``c >= 0`` and is the
  identity for ``c < 0``;
* ``torch.optim.Adam`` itself for ``adam_torch_style``, one ``step()`` per update on the host
  with the moments carried in the transformation's state (optax's Adam is the same formula, but
  its float32 ``1 - 0.999**t`` is 1.3e-5 off: the generator found our torch-exact steps 4e-5
  away from it, so it cannot judge them);
* ``linear_lr`` (torch's LinearLR): ``optax.linear_schedule(base*s, base*(s + (e-s) K/N), K)``
  with ``K = floor(N)`` (torch's recursion stops once its epoch passes ``N``), a constant
  ``base*s`` for ``K < 1``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import numpy as np
import optax

import jaxparadigm.optim as ours
from jaxparadigm.optim import schedules as S


def _linear_lr_oracle(base: float, start: float, end: float, iters: float):
    last = math.floor(iters) if iters > 0 else 0
    if last < 1:
        return optax.constant_schedule(base * start)
    return optax.linear_schedule(base * start, base * (start + (end - start) * last / iters), last)


def build_schedule(spec: tuple, lib: str):
    """The schedule of ``spec`` in ``lib`` ('ours' or 'optax')."""
    kind, *a = spec
    if kind == "number":
        return a[0]
    if lib == "ours":
        table = {
            "constant": lambda: S.constant(*a),
            "linear": lambda: S.linear(*a),
            "poly": lambda: S.polynomial(*a),
            "cosine": lambda: S.cosine_decay(*a),
            "wcd": lambda: S.warmup_cosine_decay(*a),
            "join": lambda: S.join([S.constant(a[0]), S.linear(a[0], a[1], 3)], list(a[2])),
            "linear_lr": lambda: S.linear_lr(*a),
        }
    else:
        table = {
            "constant": lambda: optax.constant_schedule(*a),
            "linear": lambda: optax.linear_schedule(*a),
            "poly": lambda: optax.polynomial_schedule(*a),
            "cosine": lambda: optax.cosine_decay_schedule(*a),
            "wcd": lambda: optax.warmup_cosine_decay_schedule(*a),
            "join": lambda: optax.join_schedules(
                [optax.constant_schedule(a[0]), optax.linear_schedule(a[0], a[1], 3)], list(a[2])
            ),
            "linear_lr": lambda: _linear_lr_oracle(*a),
        }
    return table[kind]()


def torch_clip_grad_norm(max_norm: float) -> optax.GradientTransformation:
    """``torch.nn.utils.clip_grad_norm_`` on the gradient tree, as a transformation (host call)."""
    import torch

    def clip_on_host(*leaves):
        grads = [torch.tensor(np.asarray(x, np.float32)) for x in leaves]
        params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for param, grad in zip(params, grads, strict=True):
            param.grad = grad
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        return tuple(p.grad.numpy().astype(x.dtype) for p, x in zip(params, leaves, strict=True))

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = jax.tree.flatten(updates)
        shapes = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves)
        return jax.tree.unflatten(treedef, jax.pure_callback(clip_on_host, shapes, *leaves)), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


class TorchAdamState(NamedTuple):
    """The oracle's copy of torch's Adam state: ``step``, ``exp_avg``, ``exp_avg_sq``."""

    step: jax.Array
    exp_avg: Any
    exp_avg_sq: Any


def torch_adam(learning_rate, b1: float, b2: float, eps: float, weight_decay: float):
    """``torch.optim.Adam(lr, (b1, b2), eps, weight_decay)``: each update is one torch ``step()``
    of a zero parameter (so the new parameter *is* the update, rounded once), its state restored
    from the transformation's state; ``learning_rate`` may be a schedule of the step count."""
    import torch

    def as_torch(x, like=None):  # exact: float32 holds every bfloat16
        dtype = (x if like is None else like).dtype
        torch_dtype = torch.bfloat16 if dtype == jax.numpy.bfloat16 else torch.float32
        return torch.tensor(np.asarray(x, np.float32)).to(torch_dtype)

    def step_on_host(step, lr, *leaves):
        n = len(leaves) // 4
        outputs: list = [[], [], []]
        for grad, param, m, v in zip(*(leaves[k * n : (k + 1) * n] for k in range(4)), strict=True):
            # torch keeps the gradient and the moments in the parameter's dtype
            p = torch.nn.Parameter(torch.zeros_like(as_torch(param)))
            p.grad = as_torch(grad, param).add(as_torch(param), alpha=weight_decay)  # L2 term
            opt = torch.optim.Adam([p], lr=0.0, betas=(b1, b2), eps=eps)
            opt.param_groups[0]["lr"] = float(lr)  # a schedule may go negative; torch refuses
            opt.state[p] = {
                "step": torch.tensor(float(step)),
                "exp_avg": as_torch(m),
                "exp_avg_sq": as_torch(v),
            }
            opt.step()
            state = opt.state[p]
            values = (p, state["exp_avg"], state["exp_avg_sq"])
            for out, value, like in zip(outputs, values, (grad, m, v), strict=True):
                out.append(value.detach().float().numpy().astype(like.dtype))
        return tuple(x for out in outputs for x in out)

    def init_fn(params):
        zeros = jax.tree.map(jax.numpy.zeros_like, params)
        return TorchAdamState(jax.numpy.zeros([], jax.numpy.int32), zeros, zeros)

    def update_fn(updates, state, params=None):
        leaves, treedef = jax.tree.flatten(updates)
        lr = learning_rate(state.step) if callable(learning_rate) else learning_rate
        moments = jax.tree.leaves(state.exp_avg) + jax.tree.leaves(state.exp_avg_sq)
        shapes = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves + moments)
        operands = leaves + jax.tree.leaves(params) + moments
        lr = jax.numpy.asarray(lr, jax.numpy.float32)
        out = jax.pure_callback(step_on_host, shapes, state.step, lr, *operands)
        n = len(leaves)
        trees = [jax.tree.unflatten(treedef, out[k * n : (k + 1) * n]) for k in range(3)]
        return trees[0], TorchAdamState(state.step + 1, trees[1], trees[2])

    return optax.GradientTransformation(init_fn, update_fn)


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
            "torch": ours.clip_grad_norm_torch,
        }[style](m)
    if style == "torch":
        return torch_clip_grad_norm(m)
    if style == "tf" and m < 0:
        return optax.identity()  # c * min(1/n, 1/c) = c * (1/c) = 1
    if style in ("global", "tf"):  # TF's formula gives optax's result (up to rounding)
        return optax.clip_by_global_norm(m)
    labels = {f"w{i}": f"w{i}" for i in range(len(spec["shapes"]))}  # one global norm per leaf
    return optax.multi_transform({k: optax.clip_by_global_norm(m) for k in labels}, labels)


def _weight_decay(spec: dict, lib: str):
    wd = spec["weight_decay"]
    return build_schedule(wd, lib) if isinstance(wd, tuple) else wd


def _mask(spec: dict):
    if spec.get("mask") is None:
        return None
    return {f"w{i}": flag for i, flag in enumerate(spec["mask"])}


def build_ours(spec: dict):
    lr = build_schedule(spec["lr"], "ours")
    name = spec["name"]
    if name == "adam_torch":
        opt = ours.adam_torch_style(lr, spec["b1"], spec["b2"], spec["eps"], spec["weight_decay"])
    else:
        factory = getattr(ours, name)
        if spec["inject"]:
            factory = ours.inject_hyperparams(factory)
        if name == "sgd":
            opt = factory(
                lr,
                spec["momentum"],
                spec["nesterov"],
                spec["accumulator_dtype"],
                weight_decay=spec["weight_decay"],
            )
        else:
            kw = {k: spec[k] for k in ("b1", "b2", "eps", "eps_root", "mu_dtype", "nesterov")}
            if name == "adamw":
                kw["weight_decay"] = _weight_decay(spec, "ours")
                kw["mask"] = _mask(spec)
            opt = factory(lr, **kw)
    clip = _clip(spec, "ours")
    return opt if clip is None else optax.chain(clip, opt)


def build_optax(spec: dict):
    """The oracle: optax's own chain (static hyper-parameters; optax's inject_hyperparams drifts
    in the last bit, optax #583, and ours promises the static optimiser's values)."""
    lr = build_schedule(spec["lr"], "optax")
    name = spec["name"]
    if name == "sgd":
        opt = optax.sgd(lr, spec["momentum"], spec["nesterov"], spec["accumulator_dtype"])
        if spec["weight_decay"]:  # torch-style L2 before the momentum
            opt = optax.chain(optax.add_decayed_weights(spec["weight_decay"]), opt)
    elif name == "adam_torch":
        opt = torch_adam(lr, spec["b1"], spec["b2"], spec["eps"], spec["weight_decay"])
    else:
        kw = {k: spec[k] for k in ("b1", "b2", "eps", "eps_root", "mu_dtype", "nesterov")}
        if name == "adamw":
            kw["weight_decay"] = _weight_decay(spec, "optax")
            kw["mask"] = _mask(spec)
        opt = getattr(optax, name)(lr, **kw)
    clip = _clip(spec, "optax")
    return opt if clip is None else optax.chain(clip, opt)
