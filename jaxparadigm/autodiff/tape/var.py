"""``Var``: a value that records the ops applied to it as it runs (define-by-run, C3.1, C2.2).

Each recorded op creates a ``BackwardNode`` (``nodes``) whose local derivative comes from
``formulas``; ``Var.backward`` walks the nodes in reverse topological order:

    grad[input] += node.backward(grad[node output], ``*node.saved_tensors``)

Broadcast operands get their gradient summed back over the broadcast dims (``unbroadcast``, C2.4).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff.tape.formulas import (
    DIV_SAVE,
    NO_SAVE,
    SAVE_BOTH,
    SAVE_OTHER,
    add_backward,
    div_backward,
    matmul_backward,
    mul_backward,
    pow_backward,
    sub_backward,
)
from jaxparadigm.autodiff.tape.nodes import AccumulateGrad, BackwardNode, reverse_topological
from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__ = ["Var"]


class Var:
    """A value that records the ops applied to it (define-by-run tape). C3.1.

    ``Var(value, requires_grad=False)``; ``.value``, ``.grad``, ``.grad_fn``, ``.is_leaf``.
    """

    __slots__ = ("value", "requires_grad", "grad", "grad_fn", "_accumulator", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value, requires_grad: bool = False, *, _grad_fn=None):
        if isinstance(value, Var):
            raise TypeError("Var(value): value is already a Var; use it directly")
        if not isinstance(value, jax.Array):
            value = jnp.asarray(value)
        if requires_grad and not jnp.issubdtype(value.dtype, jnp.inexact):
            raise TypeError(
                f"Var(requires_grad=True): value has dtype {value.dtype}; only floating point "
                "values can require gradients"
            )
        self.value = value
        self.requires_grad = bool(requires_grad) or _grad_fn is not None
        self.grad = None
        self.grad_fn = _grad_fn
        self._accumulator: AccumulateGrad | None = None

    # -- introspection -------------------------------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def shape(self) -> tuple:
        return tuple(self.value.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def ndim(self) -> int:
        return self.value.ndim

    def __repr__(self) -> str:
        extra = f", grad_fn=<{self.grad_fn.name}>" if self.grad_fn else ""
        extra += ", requires_grad=True" if self.requires_grad and self.is_leaf else ""
        return f"Var({self.value!r}{extra})"

    def _edge(self):
        """This Var's entry in a consumer's ``next_functions``: (node or None, 0)."""
        if not self.requires_grad:
            return (None, 0)
        if self.grad_fn is not None:
            return (self.grad_fn, 0)
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return (self._accumulator, 0)

    # -- backward ------------------------------------------------------------------------------
    def backward(
        self, grad: Var | jax.typing.ArrayLike | None = None, retain_graph: bool = False
    ) -> None:
        """Reverse sweep from this Var; fills ``.grad`` of leaves (accumulating). C3.1, C2.2."""
        if not self.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        if grad is None:
            if self.value.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = jnp.ones_like(self.value)
        else:
            grad = jnp.asarray(grad.value if isinstance(grad, Var) else grad, self.value.dtype)
            if grad.shape != self.value.shape:
                raise ValueError(
                    f"backward: grad has shape {grad.shape}; expected {self.value.shape}"
                )
        root = self._edge()[0]
        order = reverse_topological(root)
        grads = {root: grad}
        try:
            for node in order:
                g = grads.pop(node, None)
                if g is None:
                    continue
                if isinstance(node, AccumulateGrad):
                    node.accumulate(g)
                    continue
                for (nxt, _), gi in zip(node.next_functions, node.apply(g), strict=True):
                    if nxt is not None and gi is not None:
                        grads[nxt] = grads[nxt] + gi if nxt in grads else gi
        finally:
            if not retain_graph:
                for node in order:
                    node.release()

    # -- recorded ops --------------------------------------------------------------------------
    def __add__(self, other):
        return _binary("AddBackward", self, other, jnp.add, add_backward, NO_SAVE)

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        return _binary("SubBackward", self, other, jnp.subtract, sub_backward, NO_SAVE)

    def __rsub__(self, other):
        return _binary("RsubBackward", _as_var(other), self, jnp.subtract, sub_backward, NO_SAVE)

    def __mul__(self, other):
        return _binary("MulBackward", self, other, jnp.multiply, mul_backward, SAVE_OTHER)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __truediv__(self, other):
        return _binary("DivBackward", self, other, jnp.divide, div_backward, DIV_SAVE)

    def __rtruediv__(self, other):
        return _as_var(other).__truediv__(self)

    def __pow__(self, other):
        return _binary("PowBackward", self, other, jnp.power, pow_backward, SAVE_BOTH)

    def __rpow__(self, other):
        return _as_var(other).__pow__(self)

    def __matmul__(self, other):
        return _binary("MatmulBackward", self, other, jnp.matmul, matmul_backward, SAVE_OTHER)

    def __rmatmul__(self, other):
        return _as_var(other).__matmul__(self)

    def __neg__(self):
        return _unary("NegBackward", self, jnp.negative, lambda g: (-g,), save=None)

    def exp(self) -> Var:
        return _unary("ExpBackward", self, jnp.exp, lambda g, out: (g * out,), save="out")

    def log(self) -> Var:
        return _unary("LogBackward", self, jnp.log, lambda g, x: (g / x,), save="in")

    def sin(self) -> Var:
        return _unary("SinBackward", self, jnp.sin, lambda g, x: (g * jnp.cos(x),), save="in")

    def cos(self) -> Var:
        return _unary("CosBackward", self, jnp.cos, lambda g, x: (-g * jnp.sin(x),), save="in")

    def tanh(self) -> Var:
        return _unary("TanhBackward", self, jnp.tanh, lambda g, t: (g * (1 - t * t),), save="out")

    def sigmoid(self) -> Var:
        return _unary(
            "SigmoidBackward", self, jax.nn.sigmoid, lambda g, s: (g * s * (1 - s),), save="out"
        )

    def relu(self) -> Var:
        return _unary(
            "ReluBackward", self, jax.nn.relu, lambda g, r: (jnp.where(r > 0, g, 0),), save="out"
        )

    def sum(self, axis: int | Sequence[int] | None = None) -> Var:
        shape = self.shape
        axes = _normalize_axes(axis, len(shape))
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        back = lambda g: (jax.lax.broadcast_in_dim(g, shape, kept),)
        return _unary("SumBackward", self, lambda x: jnp.sum(x, axis=axes), back, save=None)

    def mean(self, axis: int | Sequence[int] | None = None) -> Var:
        shape = self.shape
        axes = _normalize_axes(axis, len(shape))
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        n = 1
        for d in axes:
            n *= shape[d]
        back = lambda g: (jax.lax.broadcast_in_dim(g / n, shape, kept),)
        return _unary("MeanBackward", self, lambda x: jnp.mean(x, axis=axes), back, save=None)

    def reshape(self, *shape: int | Sequence[int]) -> Var:
        shape = (
            tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        )
        old = self.shape
        return _unary(
            "ViewBackward",
            self,
            lambda x: jnp.reshape(x, shape),
            lambda g: (jnp.reshape(g, old),),
            save=None,
        )

    @property
    def T(self) -> Var:
        perm = tuple(reversed(range(self.ndim)))
        return _unary(
            "PermuteBackward",
            self,
            lambda x: jnp.transpose(x, perm),
            lambda g: (jnp.transpose(g, perm),),
            save=None,
        )


def _as_var(x) -> Var:
    return x if isinstance(x, Var) else Var(x)


def _normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"sum/mean: axis={axis!r} out of range for a {ndim}-d Var")
    return tuple(sorted(a % ndim for a in axes))


def _matmul_name(a: Var, b: Var) -> str:
    """PyTorch's node name for ``a @ b``: Dot/Mv/Mm for 1-d/2-d operands."""
    return {(1, 1): "DotBackward", (2, 1): "MvBackward", (2, 2): "MmBackward"}.get(
        (a.ndim, b.ndim), "MatmulBackward"
    )


def _binary(name: str, a, b, op, backward, saves) -> Var:
    a, b = _as_var(a), _as_var(b)
    out = op(a.value, b.value)
    need_a, need_b = a.requires_grad, b.requires_grad
    if not (need_a or need_b):
        return Var(out)
    a_shape, b_shape = a.shape, b.shape
    if name == "MatmulBackward":
        name = _matmul_name(a, b)
        backward = functools.partial(matmul_backward, a_shape=a_shape, b_shape=b_shape)
    keep_a, keep_b = saves(need_a, need_b)

    def fn(g, a_val=None, b_val=None):
        ga, gb = backward(g, a_val, b_val, need_a, need_b)
        return (
            None if ga is None else unbroadcast(ga, jax.ShapeDtypeStruct(a_shape, ga.dtype)),
            None if gb is None else unbroadcast(gb, jax.ShapeDtypeStruct(b_shape, gb.dtype)),
        )

    saved = (a.value if keep_a else None, b.value if keep_b else None) if keep_a or keep_b else ()
    node = BackwardNode(name, (a._edge(), b._edge()), fn, saved)
    return Var(out, _grad_fn=node)


def _unary(name: str, x: Var, op, backward, save) -> Var:
    out = op(x.value)
    if not x.requires_grad:
        return Var(out)
    saved = {"in": (x.value,), "out": (out,), None: ()}[save]
    node = BackwardNode(name, (x._edge(),), backward, saved)
    return Var(out, _grad_fn=node)
