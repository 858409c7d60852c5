"""Define-by-run tape: every op on a ``Var`` records its backward node as it runs (C3.1, C2.2).

``y = x**2 + 3*x`` already carries its chain: ``y.grad_fn`` is an ``AddBackward`` whose
``next_functions`` are ``PowBackward`` and ``MulBackward``, down to the ``AccumulateGrad`` of the
leaf ``x`` (PyTorch's names, without the overload digit). ``y.backward()`` walks the nodes in
reverse topological order (micrograd / minitorch style):

    grad[input] += node.backward(grad[node output], ``*node.saved_tensors``)

Saved tensors are dropped once backward has run unless ``retain_graph=True``; running a node whose
saved tensors were dropped raises PyTorch's ``RuntimeError`` (claim C2.2). Broadcast operands get
their gradient summed back over the broadcast dims (claim C2.4 rules).

The tape is split by concern: ``nodes`` (backward nodes, saved tensors, reverse order),
``var`` (``Var`` and its recorded ops), ``formulas`` (each op's local derivative); this
module is the public face: the functional ops, ``saved_tensors_report`` and ``grad``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax.numpy as jnp

from jaxparadigm.autodiff.argnums import normalize_argnums, resolve_argnums
from jaxparadigm.autodiff.tape.nodes import (
    AccumulateGrad,
    BackwardNode,
    SavedTensors,
    saved_tensors_below,
)
from jaxparadigm.autodiff.tape.var import Var, _as_var

__all__ = [
    "AccumulateGrad",
    "BackwardNode",
    "SavedTensors",
    "Var",
    "cos",
    "exp",
    "grad",
    "log",
    "relu",
    "saved_tensors_report",
    "sigmoid",
    "sin",
    "tanh",
]


def exp(x: Var) -> Var:
    """e^x, recorded as ``ExpBackward`` (saves the output). C3.1."""
    return _as_var(x).exp()


def log(x: Var) -> Var:
    """ln x, recorded as ``LogBackward`` (saves the input). C3.1."""
    return _as_var(x).log()


def sin(x: Var) -> Var:
    """sin x, recorded as ``SinBackward``. C3.1."""
    return _as_var(x).sin()


def cos(x: Var) -> Var:
    """cos x, recorded as ``CosBackward``. C3.1."""
    return _as_var(x).cos()


def tanh(x: Var) -> Var:
    """tanh x, recorded as ``TanhBackward`` (saves the output; d = 1 - tanh^2). C3.1."""
    return _as_var(x).tanh()


def sigmoid(x: Var) -> Var:
    """1 / (1 + e^-x), recorded as ``SigmoidBackward`` (d = s (1 - s)). C3.1."""
    return _as_var(x).sigmoid()


def relu(x: Var) -> Var:
    """max(x, 0), recorded as ``ReluBackward`` (d = 1[out > 0]). C3.1."""
    return _as_var(x).relu()


def saved_tensors_report(root: Var) -> SavedTensors:
    """Count and bytes of saved tensors still held by ``root``'s graph (0 after backward). C2.2."""
    if not isinstance(root, Var):
        raise TypeError(f"saved_tensors_report: root={root!r}; expected a Var")
    if root.grad_fn is None:
        return SavedTensors(0, 0)
    return saved_tensors_below(root.grad_fn)


def grad(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``tape.grad(f)(x)``: run ``f`` on leaf Vars, backward, return the leaves' ``.grad``. C3.1."""
    if not callable(f):
        raise TypeError(f"tape.grad: f={f!r} is not callable")
    argnums = normalize_argnums(argnums, "tape.grad")

    def grad_f(*args):
        order = resolve_argnums(argnums, len(args), "tape.grad")
        idx = set(order)
        vs = [Var(x, requires_grad=True) if i in idx else x for i, x in enumerate(args)]
        out = f(*vs)
        if not isinstance(out, Var) or out.value.size != 1:
            raise TypeError("tape.grad: f must return a scalar Var")
        if out.requires_grad:
            out.backward()
        gs = [
            vs[i].grad if vs[i].grad is not None else jnp.zeros_like(vs[i].value)
            for i in sorted(idx)
        ]
        if isinstance(argnums, int):
            return gs[0]
        by_index = dict(zip(sorted(idx), gs, strict=True))
        return tuple(by_index[i] for i in order)

    return grad_f
