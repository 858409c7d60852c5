"""Scaling by a (scheduled) learning rate: ``u <- -lr(count) * u`` (C4.1, C4.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import check_learning_rate, warn_value
from jaxparadigm.optim.param_dtypes import require_inexact


class ScaleByScheduleState(NamedTuple):
    """Step counter of a scheduled scale (int32 scalar, saturating at ``2**31 - 1``)."""

    count: jax.Array  # type: ignore[assignment]  # field shadows tuple.count, as in optax states


def scale(step_size: float) -> optax.GradientTransformation:
    """Multiply every update by a fixed scalar: ``u <- step_size * u`` (C4.1)."""

    def update_fn(updates, state, params=None):
        del params
        require_inexact("updates", updates)
        return jax.tree.map(lambda g: step_size * g, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


def scale_updates(updates: Any, step_size: Any) -> Any:
    """``u <- step_size * u`` with ``step_size`` (a traced scalar) cast to each update's dtype.

    Integer updates raise ``TypeError`` (the product would be truncated back to integers).
    """
    require_inexact("updates", updates)
    return jax.tree.map(lambda g: jnp.array(step_size, dtype=g.dtype) * g, updates)


def scale_by_schedule(step_size_fn: Callable[[Any], Any]) -> optax.GradientTransformation:
    """Multiply updates by ``step_size_fn(count)`` and increment ``count`` safely (C4.3).

    Formula: ``u <- step_size_fn(count) * u`` in the update's dtype; ``count <- safe_increment``.
    """
    if not callable(step_size_fn):
        raise TypeError(f"step_size_fn={step_size_fn!r}: expected a callable count -> value")

    def init_fn(params):
        del params
        return ScaleByScheduleState(count=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        del params
        updates = scale_updates(updates, step_size_fn(state.count))
        return updates, ScaleByScheduleState(count=safe_increment(state.count))

    return optax.GradientTransformation(init_fn, update_fn)


def scale_by_learning_rate(
    learning_rate: float | Callable[[Any], Any] | None, flip_sign: bool = True
) -> optax.GradientTransformation:
    """Descent step: ``u <- -lr * u`` for a number, ``u <- -lr(count) * u`` for a schedule (C4.1).

    ``learning_rate`` is a callable schedule or, as in optax, any real number (a traced one too:
    an optimiser built under ``jax.jit``/``jax.grad``); a negative, NaN or infinite rate warns.
    As optax: ``flip_sign=False`` scales by ``+lr``, and ``None`` means no scaling at all (the
    identity; it warns when the sign would have been flipped: the updates then ascend the loss).
    Integer updates are refused with ``TypeError`` (``-lr * g`` would be truncated back to
    integers).
    """
    if learning_rate is None:
        if flip_sign:
            warn_value(
                "learning_rate",
                None,
                "None means no scaling (optax's identity): the updates are not negated, so "
                "applying them ascends the loss",
            )
        return optax.identity()
    learning_rate = check_learning_rate("learning_rate", learning_rate)
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)
