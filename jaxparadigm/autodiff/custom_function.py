"""PyTorch-style ``autograd.Function`` on ``jax.custom_vjp``: residuals = saved tensors (C2.2).

Subclass with ``@staticmethod forward(ctx, *args)`` and ``@staticmethod backward(ctx, *grads)``;
call ``MyFn.apply(*args)``. ``ctx.save_for_backward(*arrays)`` chooses the residuals of the
custom VJP: exactly those arrays (plus any array attributes set on ``ctx``) are kept alive between
forward and backward, nothing else. ``MyFn.residual_report(*args)`` measures them. Composes with
``jax.jit``, ``jax.vmap``, ``jax.grad`` and our own ``jaxparadigm.autodiff.grad``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Function", "FunctionCtx", "Residuals"]


def _is_array(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _as_array(x):
    return x if isinstance(x, jax.Array) else jnp.asarray(x)


def _is_dynamic_arg(x) -> bool:
    """Arguments that become custom_vjp primals: arrays, Python numbers, pytrees of them."""
    leaves = jax.tree_util.tree_leaves(x)
    return bool(leaves) and all(
        _is_array(leaf) or isinstance(leaf, (float, int, complex)) and not isinstance(leaf, bool)
        for leaf in leaves
    )


@jax.tree_util.register_pytree_node_class
class FunctionCtx:
    """The ``ctx`` passed to ``forward``/``backward``: ``save_for_backward``, ``saved_tensors``.

    Array attributes (``ctx.scale = jnp.float32(2)``) travel as residuals too; other attributes
    (Python numbers, strings, shapes) travel as static data. C2.2.
    """

    def __init__(self):
        self._saved: tuple = ()

    def save_for_backward(self, *arrays: jax.Array | np.ndarray | None) -> None:
        """Keep ``arrays`` for backward; they become the custom VJP's residuals. C2.2."""
        for i, a in enumerate(arrays):
            if a is not None and not _is_array(a):
                raise TypeError(
                    f"save_for_backward: argument {i} is a {type(a).__name__}; expected arrays "
                    "(store Python values as ctx attributes instead)"
                )
        self._saved = tuple(arrays)

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    def tree_flatten(self) -> tuple[tuple[tuple, dict[str, Any]], tuple[tuple[str, Any], ...]]:
        attrs = {k: v for k, v in vars(self).items() if k != "_saved"}
        arrays = {k: v for k, v in attrs.items() if _is_array(v)}
        static = tuple(sorted((k, v) for k, v in attrs.items() if k not in arrays))
        return (self._saved, arrays), static

    @classmethod
    def tree_unflatten(
        cls, static: Iterable[tuple[str, Any]], children: tuple[Iterable[Any], dict[str, Any]]
    ) -> FunctionCtx:
        ctx = cls.__new__(cls)
        saved, arrays = children
        ctx._saved = tuple(saved)
        for k, v in static:
            setattr(ctx, k, v)
        for k, v in arrays.items():
            setattr(ctx, k, v)
        return ctx


class Residuals(NamedTuple):
    """What a custom VJP keeps between forward and backward: leaf count and bytes. C2.2."""

    count: int  # type: ignore[assignment]  # field shadows tuple.count (torch's name)
    nbytes: int


class Function:
    """Base class for custom ops with a hand-written backward (``torch.autograd.Function``). C2.2.

    ``apply(*args)`` = ``forward(ctx, *args)`` in the forward pass; the backward pass calls
    ``backward(ctx, *output_grads)`` which returns one gradient per ``apply`` argument (``None``
    for arguments without a gradient, e.g. integers or static Python values).
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError(
            "Function subclasses must define @staticmethod forward(ctx, *args)"
        )

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError(
            "Function subclasses must define @staticmethod backward(ctx, *grads)"
        )

    def __init__(self):
        raise TypeError(f"{type(self).__name__} is used through {type(self).__name__}.apply(...)")

    @classmethod
    def _split(cls, args):
        if "forward" not in vars(cls) or "backward" not in vars(cls):
            raise TypeError(f"{cls.__name__} must define both forward and backward staticmethods")
        dyn = tuple(i for i, a in enumerate(args) if _is_dynamic_arg(a))
        return dyn, {i: a for i, a in enumerate(args) if i not in dyn}

    @classmethod
    def _build(cls, n_args: int, dyn: tuple, static: dict):
        def merge(dyn_vals):
            # jax hands custom_vjp primals that were Python scalars to fwd as TypedFloat /
            # TypedInt (float/int subclasses): make every dynamic leaf an array (weak type kept)
            # so forward sees arrays and can save_for_backward them.
            dyn_vals = jax.tree_util.tree_map(_as_array, dyn_vals)
            full = [None] * n_args
            for i, v in zip(dyn, dyn_vals, strict=True):
                full[i] = v
            for i, v in static.items():
                full[i] = v
            return full

        @jax.custom_vjp
        def fn(*dyn_vals):
            return cls.forward(FunctionCtx(), *merge(dyn_vals))

        def fwd(*dyn_vals):
            ctx = FunctionCtx()
            out = cls.forward(ctx, *merge(dyn_vals))
            return out, ctx

        def bwd(ctx, g):
            grads = cls.backward(ctx, *g) if isinstance(g, tuple) else cls.backward(ctx, g)
            grads = grads if isinstance(grads, tuple) else (grads,)
            if len(grads) != n_args:
                raise TypeError(
                    f"{cls.__name__}.backward returned {len(grads)} gradient(s); expected "
                    f"{n_args} (one per apply() argument, None where there is none)"
                )
            return tuple(grads[i] for i in dyn)

        fn.defvjp(fwd, bwd)
        return fn, fwd

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run ``forward``; differentiating the result calls ``backward``. C2.2."""
        dyn, static = cls._split(args)
        fn, _ = cls._build(len(args), dyn, static)
        return fn(*(args[i] for i in dyn))

    @classmethod
    def residual_report(cls, *args: Any) -> Residuals:
        """Count and bytes of what the forward keeps for backward (its residual pytree). C2.2."""
        dyn, static = cls._split(args)
        _, fwd = cls._build(len(args), dyn, static)
        residual_leaves = lambda *a: jax.tree_util.tree_leaves(fwd(*a)[1])
        leaves = jax.eval_shape(residual_leaves, *(args[i] for i in dyn))
        nbytes = sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in leaves)
        return Residuals(len(leaves), nbytes)
