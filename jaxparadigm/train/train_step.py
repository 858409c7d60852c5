"""The train state and the one jitted training step (C5.1).

    (loss, grads) = value_and_grad(loss_scale * L(params; batch, rng))      (grads unscaled after)
    updates, opt' = tx.update(grads, opt, params);  params' = params + lr_scale * updates
    finite        = isfinite(loss) and all(isfinite(grads))
    state'        = state with (params', opt') if finite or unguarded else unchanged (skip)

With dynamic loss scaling (C4.2) a step whose unscaled loss is finite but whose scaled gradients
overflow, while the scale can still shrink, is an *overflow*: the loss scaler's business. It is
skipped and the scale halves, but it is not a guard bad step:

    overflow  = isfinite(loss) and not all(isfinite(grads)) and shrink(S) < S
    guard'    = guard_update(guard, finite or overflow)
    S'        = update(S, all(isfinite(grads)))  if isfinite(loss) else S

So a run that starts with too large a scale calibrates without rolling back; a non-finite
unscaled loss (bad data, divergence) or an overflow at the minimum scale still counts, and leaves
the scale alone (it is not a scaling problem).

The data step ``step`` and the RNG always advance, so a skipped batch is not replayed. ``opt_steps``
counts accepted updates (it is the schedule's argument for the logged learning rate). The state is
donated to the step (``donate_argnums=0``): its buffers are reused for the next state.

Fault injection (``train.faults``): ``step(state, batch, grad_fault)`` with a float32 scalar
replaces every gradient element by ``grad_fault`` when it is NaN or Inf (a finite value, e.g. 0,
changes nothing): ``g <- where(isfinite(f), g, f)``. Under loss scaling such a step is handled as
an overflow (finite loss, non-finite gradients). Without the argument the step has no fault code.

``grad="jaxparadigm"`` computes ``value_and_grad`` with our own engine
(``jaxparadigm.autodiff.value_and_grad``: graph + VJP registry) instead of ``jax.value_and_grad``.

Sharding (``layout``, a :class:`jaxparadigm.train.sharding.StepLayout`): the forward pass uses
``with_sharding_constraint(params, layout.gathered)`` (an all-gather when the parameters are
split), the gradients are constrained to ``layout.grads`` (a reduce-scatter or an all-reduce), and
the step's outputs keep ``layout.state``; with ``layout.rules`` (``fsdp_tensor``) the model's
named activations are laid out by them (``models.partitioning.sharding_rules``, entered inside
the traced step). The arithmetic is unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxparadigm import autodiff
from jaxparadigm.models.partitioning import sharding_rules
from jaxparadigm.optim import DynamicLossScale, safe_increment
from jaxparadigm.train.guard import GuardState, all_finite, guard_init, guard_update, tree_select

if TYPE_CHECKING:
    from jaxparadigm.train.sharding import StepLayout

__all__ = ["TrainState", "init_train_state", "make_eval_step", "make_train_step"]

# train.grad: which engine computes (loss, grads) in the step.
VALUE_AND_GRAD: dict[str, Callable[..., Any]] = {
    "jax": jax.value_and_grad,
    "jaxparadigm": autodiff.value_and_grad,
}


class TrainState(NamedTuple):
    """Everything a bitwise resume needs: data step, params, optimiser state, RNG, guard, scales."""

    step: jax.Array  # int32, data position (advances on every step, skipped or not)
    opt_steps: jax.Array  # int32, accepted updates
    params: Any
    opt_state: Any
    rng: jax.Array  # uint32[2] raw PRNG key
    lr_scale: jax.Array  # float32, lowered by rollbacks
    loss_scale: Any  # LossScaleState or () when loss scaling is off
    guard: GuardState


def init_train_state(
    params: Any,
    tx: optax.GradientTransformation,
    seed: int,
    loss_scale: DynamicLossScale | None = None,
) -> TrainState:
    """Fresh state: step 0, ``tx.init(params)``, ``PRNGKey(seed)``, lr scale 1 (C5.1).

    Every leaf is a fresh buffer (no two leaves alias), as donation to the step requires.
    """
    state = TrainState(
        step=jnp.zeros((), jnp.int32),
        opt_steps=jnp.zeros((), jnp.int32),
        params=params,
        opt_state=tx.init(params),
        rng=jax.random.PRNGKey(seed),
        lr_scale=jnp.ones((), jnp.float32),
        loss_scale=loss_scale.init() if loss_scale is not None else (),
        guard=guard_init(),
    )
    return jax.tree_util.tree_map(lambda x: jnp.array(x, copy=True), state)


def make_train_step(
    graphdef: nnx.GraphDef,
    loss_fn: Callable,
    tx: optax.GradientTransformation,
    *,
    lr_fn: Callable | None = None,
    loss_scale: DynamicLossScale | None = None,
    guard: bool = True,
    donate: bool = True,
    grad: str = "jax",
    layout: StepLayout | None = None,
) -> jax.stages.Wrapped:
    """Jitted ``step(state, batch) -> (state, metrics)`` (C5.1; loss scaling C4.2).

    ``loss_fn(model, batch, rng)`` gets the NNX module rebuilt from ``graphdef`` and the params.
    ``lr_fn(opt_steps)`` is the schedule, used only to report ``lr`` in the metrics.
    ``loss_scale`` is a ``DynamicLossScale`` (``jaxparadigm.optim.dynamic_loss_scale``) or None.
    Non-finite steps are skipped when ``guard`` or loss scaling is on. Metrics: ``loss`` (unscaled),
    ``grad_norm``, ``lr``, ``finite`` (loss and gradients finite), ``accepted`` (the update was
    applied: finite, or unguarded), ``overflow`` (skipped as a loss-scale overflow, not a guard bad
    step) and, with loss scaling, ``loss_scale`` (S used).
    ``grad`` (``train.grad``) picks the engine: ``"jax"`` or ``"jaxparadigm"`` (ours, C3.2).
    ``layout``: a ``StepLayout`` (sharded state and batch; see the module docstring) or None.
    """
    value_and_grad = _check_step_arguments(loss_fn, tx, loss_scale, grad)

    def step(state: TrainState, batch, grad_fault=None):
        rng, sub = jax.random.split(state.rng)
        loss, grads = _sharded_value_and_grad(
            value_and_grad, graphdef, loss_fn, loss_scale, layout, state, batch, sub
        )
        loss_finite = jnp.isfinite(loss)
        grads = _inject_fault(grads, grad_fault)
        grads, grads_finite, new_ls, overflow = _unscale(loss_scale, grads, state, loss_finite)
        finite = jnp.logical_and(grads_finite, loss_finite)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        updates = jax.tree_util.tree_map(lambda u: (u * state.lr_scale).astype(u.dtype), updates)
        params = optax.apply_updates(state.params, updates)
        accept = finite if (guard or loss_scale is not None) else jnp.array(True)
        new_state = _guarded_next_state(state, accept, finite | overflow, guard, params, opt_state)
        new_state = new_state._replace(rng=rng, loss_scale=new_ls)
        lr = (lr_fn(state.opt_steps) if lr_fn is not None else 1.0) * state.lr_scale
        metrics = {
            "loss": loss,
            "grad_norm": optax.global_norm(grads),
            "lr": jnp.asarray(lr, jnp.float32),
            "finite": finite,
            "accepted": accept,
            "overflow": overflow,
        }
        if loss_scale is not None:
            metrics["loss_scale"] = state.loss_scale.scale
        return new_state, metrics

    return _jit(step, donate, layout)


def _check_step_arguments(loss_fn, tx, loss_scale, grad: str) -> Callable:
    """The ``value_and_grad`` of engine ``grad``, after checking the step factory's arguments."""
    if grad not in VALUE_AND_GRAD:
        raise ValueError(f"grad: got {grad!r}, expected one of {sorted(VALUE_AND_GRAD)}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn: got {type(loss_fn).__name__}, expected a callable")
    if not (hasattr(tx, "init") and hasattr(tx, "update")):
        raise TypeError(f"tx: got {type(tx).__name__}, expected an optax GradientTransformation")
    if loss_scale is not None and not all(
        hasattr(loss_scale, f) for f in ("init", "scale", "unscale", "update")
    ):
        raise TypeError(
            f"loss_scale: got {type(loss_scale).__name__}, expected a DynamicLossScale or None"
        )
    return VALUE_AND_GRAD[grad]


def _sharded_value_and_grad(
    value_and_grad, graphdef, loss_fn, loss_scale, layout, state, batch, rng
):
    """Sharding + loss scaling of the forward/backward pass: ``(unscaled loss, scaled grads)``.

    The parameters are gathered to ``layout.gathered`` for the forward pass and the gradients
    constrained to ``layout.grads`` (no constraint without a layout); the loss is multiplied by
    the loss scale S when scaling is on."""

    def objective(params):
        params = _constrain(params, layout.gathered if layout is not None else None)
        with _activation_rules(layout):
            loss = loss_fn(nnx.merge(graphdef, params), batch, rng)
        scaled = loss_scale.scale(loss, state.loss_scale) if loss_scale is not None else loss
        return scaled, loss

    (_, loss), grads = value_and_grad(objective, has_aux=True)(state.params)
    return loss, _constrain(grads, layout.grads if layout is not None else None)


def _unscale(loss_scale, grads, state: TrainState, loss_finite):
    """Loss scaling's step: ``(grads, grads_finite, S', overflow)`` (module docstring formulas);
    without a loss scaler the gradients as they are, ``()`` and no overflow."""
    if loss_scale is None:
        return grads, all_finite(grads), (), jnp.array(False)
    grads, grads_finite = loss_scale.unscale(grads, state.loss_scale)
    # A non-finite unscaled loss is not a scaling problem: leave the scale alone.
    new_ls = tree_select(
        loss_finite, loss_scale.update(state.loss_scale, grads_finite), state.loss_scale
    )
    can_shrink = (
        loss_scale.update(state.loss_scale, jnp.array(False)).scale < state.loss_scale.scale
    )
    overflow = loss_finite & jnp.logical_not(grads_finite) & can_shrink
    return grads, grads_finite, new_ls, overflow


def _guarded_next_state(
    state: TrainState, accept, good, guard: bool, params, opt_state
) -> TrainState:
    """The guard's step: the new params/optimiser state only where ``accept``; the data step
    always advances; the guard counts ``good`` (finite or a loss-scale overflow) when on."""
    return state._replace(
        step=safe_increment(state.step),
        opt_steps=jnp.where(accept, safe_increment(state.opt_steps), state.opt_steps),
        params=tree_select(accept, params, state.params),
        opt_state=tree_select(accept, opt_state, state.opt_state),
        guard=guard_update(state.guard, good) if guard else state.guard,
    )


def _jit(step: Callable, donate: bool, layout) -> jax.stages.Wrapped:
    """``jax.jit`` of the step, donating the state; a sharded step keeps ``layout.state``."""
    donate_argnums = (0,) if donate else ()
    if layout is None:
        return jax.jit(step, donate_argnums=donate_argnums)
    out_shardings = (layout.state, layout.replicated)
    return jax.jit(step, donate_argnums=donate_argnums, out_shardings=out_shardings)


def _activation_rules(layout) -> contextlib.AbstractContextManager:
    """The layout's logical rules for the model's activations (none: a null context)."""
    if layout is None or layout.rules is None:
        return contextlib.nullcontext()
    return sharding_rules(layout.mesh, layout.rules)


def _constrain(tree, shardings):
    """``with_sharding_constraint(tree, shardings)``; ``tree`` itself when ``shardings`` is None."""
    return tree if shardings is None else jax.lax.with_sharding_constraint(tree, shardings)


def _inject_fault(grads, grad_fault):
    """``where(isfinite(f), g, f)`` per gradient element; no-op (no code) when ``f`` is None."""
    if grad_fault is None:
        return grads
    f = jnp.asarray(grad_fault, jnp.float32)
    return jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(f), g, f.astype(g.dtype)), grads)


def make_eval_step(
    graphdef: nnx.GraphDef, metric_fn: Callable, layout: StepLayout | None = None
) -> Callable:
    """Jitted ``eval(params, batch) -> metrics`` with ``metric_fn(model, batch)`` (C5.1); with a
    ``StepLayout``, the metrics are replicated (readable by every process)."""

    def fn(params, batch):
        with _activation_rules(layout):
            return metric_fn(nnx.merge(graphdef, params), batch)

    if layout is None:
        return jax.jit(fn)
    return jax.jit(fn, out_shardings=layout.replicated)
