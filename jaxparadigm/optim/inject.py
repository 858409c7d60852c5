"""Live hyper-parameters held in the optimiser state, like ``optax.inject_hyperparams`` (C4.1-C4.3).

``inject_hyperparams(adam)(1e-3, b1=0.9)`` is the update of ``adam(1e-3, b1=0.9)``, but it reads
its numeric hyper-parameters from ``state.hyperparams`` (float32 scalars) instead of folding them
into the compiled program. ``set_hyperparams(state, learning_rate=5e-4)`` changes values, never
shapes or dtypes, so a jitted step does not recompile. Every rate is multiplied by ``lr_scale``
(1.0 at init): the knob for a rollback's learning-rate decay. A schedule stays a schedule: its
value at the step is stored (read-only) as ``scheduled_learning_rate``; scale it with
``lr_scale``. Supported factories: ``adam``, ``adamw`` (``b1``, ``b2``, ``eps``, ``eps_root``,
``weight_decay`` live) and ``sgd`` (``momentum`` and ``weight_decay`` live when built non-zero);
a scheduled ``weight_decay`` stays a schedule (read at the step, as the static optimiser reads
it). Values are taken as the factories take them (any real number, surely-wrong ones warn);
``lr_scale``, this library's own knob, must be a finite number ``>= 0``.

Bitwise equal to the static optimiser with float32 params. The static update folds ``1 - b1``
as a float64 difference rounded once to float32; storing ``b1`` in float32 and subtracting in
float32 rounds differently, the drift reported for optax's wrapper (optax #583, #1532). So
``set_hyperparams`` derives ``one_minus_b1``/``one_minus_b2`` in float64 on the host and stores
them beside ``b1``/``b2``: change hyper-parameters only through it. With bfloat16/float16 params
the float32 values are cast to the params' dtype, which may differ from the static path's
direct rounding in the last bit.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.optim.adam import (
    AdamCoefficients,
    adam,
    adamw,
    init_adam_state,
    update_adam_state,
)
from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import (
    accept_number,
    check_decay,
    check_learning_rate,
    check_momentum,
    check_number,
    check_weight_decay,
    storage_dtype,
)
from jaxparadigm.optim.learning_rate import scale_updates
from jaxparadigm.optim.param_dtypes import require_inexact
from jaxparadigm.optim.sgd import (
    TraceState,
    init_trace,
    momentum_update,
    sgd,
    uses_momentum,
    uses_weight_decay,
)
from jaxparadigm.optim.weight_decay import LiveDecay, decay_weights


class InjectHyperparamsState(NamedTuple):
    """``count``: int32 steps taken (schedules read it); ``hyperparams``: float32 scalars by
    name; ``inner_state``: the optimiser's own state (``ScaleByAdamState``, ``TraceState`` or
    ``optax.EmptyState``)."""

    count: jax.Array  # type: ignore[assignment]  # field shadows tuple.count, as in optax states
    hyperparams: dict[str, jax.Array]
    inner_state: Any


_COMPLEMENTS = {"b1": "one_minus_b1", "b2": "one_minus_b2"}
_READ_ONLY = ("scheduled_learning_rate", *_COMPLEMENTS.values())
_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    # As the factories take them: any real number, a surely-wrong one warns.
    "learning_rate": check_learning_rate,
    # This library's rollback knob, not an optax argument: refused outside [0, inf).
    "lr_scale": lambda name, v: check_number(name, v, low=0.0),
    "b1": check_decay,
    "b2": check_decay,
    "eps": lambda name, v: accept_number(
        name, v, lambda x: "a negative eps lets the denominator cross 0" if x < 0 else None
    ),
    "eps_root": lambda name, v: accept_number(
        name, v, lambda x: "sqrt(v + eps_root) is NaN once v + eps_root < 0" if x < 0 else None
    ),
    "weight_decay": check_weight_decay,
    "momentum": check_momentum,
}


def _refuse_traced(values: dict[str, Any]) -> None:
    """A ``TypeError`` for a traced value: hyper-parameters are checked on the host."""
    for name, value in values.items():
        if isinstance(value, jax.core.Tracer):
            raise TypeError(
                f"{name}: got a traced value ({type(value).__name__}); set_hyperparams checks "
                "its values on the host, so call it outside jax.jit (the values stay live: "
                "changing them between jitted steps never recompiles)"
            )


def _as_live(values: dict[str, Any]) -> dict[str, jax.Array]:
    """Float32 scalars of checked values; ``one_minus_b`` is ``1 - b`` in float64, rounded once
    (a traced ``b``, from an optimiser built under ``jax.jit``: ``1 - b`` in float32)."""
    live = {}
    for name, value in values.items():
        live[name] = jnp.asarray(value, jnp.float32)
        if name in _COMPLEMENTS:
            if isinstance(value, jax.core.Tracer):
                live[_COMPLEMENTS[name]] = 1 - live[name]
            else:
                live[_COMPLEMENTS[name]] = jnp.asarray(1 - float(value), jnp.float32)
    return live


def _scale_by_rate(updates, hp, count, schedule):
    """``u <- -(lr * lr_scale) * u``; with a schedule ``lr = schedule(count)`` (recorded)."""
    if schedule is None:
        return scale_updates(updates, -1 * (hp["learning_rate"] * hp["lr_scale"])), hp
    value = schedule(count)
    hp = {**hp, "scheduled_learning_rate": jnp.asarray(value, jnp.float32)}
    return scale_updates(updates, -1 * (value * hp["lr_scale"])), hp


def _live_transformation(numeric, schedule, init_inner, direction):
    """Shared init/update: ``direction(updates, inner, params, hp, count) -> (updates, inner)``."""

    def init_fn(params):
        require_inexact("params", params)
        hp = _as_live(numeric)
        if schedule is not None:
            hp["scheduled_learning_rate"] = jnp.asarray(schedule(0), jnp.float32)
        return InjectHyperparamsState(jnp.zeros([], jnp.int32), hp, init_inner(params))

    def update_fn(updates, state, params=None):
        hp = state.hyperparams
        updates, inner = direction(updates, state.inner_state, params, hp, state.count)
        updates, hp = _scale_by_rate(updates, hp, state.count, schedule)
        return updates, InjectHyperparamsState(safe_increment(state.count), hp, inner)

    return optax.GradientTransformation(init_fn, update_fn)


def _split_learning_rate(arguments):
    learning_rate = arguments["learning_rate"]
    if callable(learning_rate):
        return {"lr_scale": 1.0}, learning_rate
    return {"learning_rate": learning_rate, "lr_scale": 1.0}, None


def _weight_decay(arguments: dict[str, Any], numeric: dict[str, Any]) -> Callable[..., Any]:
    """The decay ``wd`` a live step reads: ``hp["weight_decay"]`` for a number (made live in
    ``numeric``), the schedule's value at the step for a schedule (static, as optax's)."""
    weight_decay = arguments["weight_decay"]
    if callable(weight_decay):
        return lambda hp, count: weight_decay(count)
    numeric["weight_decay"] = weight_decay
    return lambda hp, count: LiveDecay(hp["weight_decay"])


def _live_adam(arguments: dict[str, Any]) -> optax.GradientTransformation:
    numeric, schedule = _split_learning_rate(arguments)
    numeric.update({k: arguments[k] for k in ("b1", "b2", "eps", "eps_root")})
    decayed = "weight_decay" in arguments  # adamw
    decay = _weight_decay(arguments, numeric) if decayed else None
    mu_dtype = storage_dtype("mu_dtype", arguments["mu_dtype"])
    nu_dtype = storage_dtype("nu_dtype", arguments["nu_dtype"])
    nesterov = bool(arguments["nesterov"])  # checked by the factory

    def direction(updates, inner, params, hp, count):
        coefficients = AdamCoefficients(
            hp["b1"], hp["one_minus_b1"], hp["b2"], hp["one_minus_b2"], hp["eps"], hp["eps_root"]
        )
        updates, inner = update_adam_state(updates, inner, coefficients, nesterov)
        if decay is not None:
            updates = decay_weights(updates, params, decay(hp, count), arguments["mask"])
        return updates, inner

    init_inner = lambda params: init_adam_state(params, mu_dtype, nu_dtype)
    return _live_transformation(numeric, schedule, init_inner, direction)


def _live_sgd(arguments: dict[str, Any]) -> optax.GradientTransformation:
    numeric, schedule = _split_learning_rate(arguments)
    with_momentum = uses_momentum(arguments["momentum"])
    if with_momentum:
        numeric["momentum"] = arguments["momentum"]
    decay = (
        _weight_decay(arguments, numeric) if uses_weight_decay(arguments["weight_decay"]) else None
    )
    nesterov = bool(arguments["nesterov"])
    accumulator_dtype = storage_dtype("accumulator_dtype", arguments["accumulator_dtype"])

    def init_inner(params):
        if with_momentum:
            return init_trace(params, accumulator_dtype)
        return optax.EmptyState()

    def direction(updates, inner, params, hp, count):
        require_inexact("updates", updates)
        if decay is not None:
            updates = decay_weights(updates, params, decay(hp, count))
        if with_momentum:
            updates, kept = momentum_update(
                updates, inner.trace, hp["momentum"], nesterov, accumulator_dtype
            )
            inner = TraceState(trace=kept)
        return updates, inner

    return _live_transformation(numeric, schedule, init_inner, direction)


_LIVE_BUILDERS = {adam: _live_adam, adamw: _live_adam, sgd: _live_sgd}


def inject_hyperparams(factory: Callable[..., Any]) -> Callable[..., optax.GradientTransformation]:
    """Wrap ``adam``, ``adamw`` or ``sgd`` so its numeric hyper-parameters live in the state.

    The wrapped factory takes the same arguments (validated by the factory itself, with the
    same errors and warnings) and returns a transformation with ``InjectHyperparamsState``; its
    updates are bitwise those of ``factory(...)`` for float32 params (C4.1-C4.3). One refusal the
    factory does not make: ``learning_rate=None`` (no scaling) raises ``TypeError``, as there is
    no rate for ``lr_scale`` to scale.
    """
    if factory not in _LIVE_BUILDERS:
        raise TypeError(
            f"factory={factory!r}: expected jaxparadigm.optim.adam, adamw or sgd "
            "(the optimisers whose hyper-parameters can live in the state)"
        )
    signature = inspect.signature(factory)

    @functools.wraps(factory)
    def wrapped(*args: Any, **kwargs: Any) -> optax.GradientTransformation:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.arguments["learning_rate"] is None:  # kept: no rate for lr_scale to scale
            raise TypeError(
                "learning_rate=None: inject_hyperparams needs a rate (a number or a schedule) "
                "for lr_scale to scale; for no scaling at all build the optimiser without it"
            )
        factory(*bound.args, **bound.kwargs)  # the static factory validates every argument
        return _LIVE_BUILDERS[factory](dict(bound.arguments))

    return wrapped


def _is_injected(node: Any) -> bool:
    return isinstance(node, InjectHyperparamsState)


def set_hyperparams(state: Any, **values: float) -> Any:
    """Return ``state`` with live hyper-parameters replaced (host-side; never recompiles).

    ``state`` is an ``InjectHyperparamsState`` or any optimiser state holding exactly one (e.g.
    a chain's tuple). Names must be live in it; ``one_minus_b1``/``one_minus_b2`` follow
    ``b1``/``b2`` and ``scheduled_learning_rate`` follows the schedule (both refused here).
    """
    found = [n for n in jax.tree.leaves(state, is_leaf=_is_injected) if _is_injected(n)]
    if len(found) != 1:
        raise ValueError(
            f"state={type(state).__name__}: expected exactly one InjectHyperparamsState inside, "
            f"found {len(found)}"
        )
    current = found[0].hyperparams
    for name in values:
        if name in _READ_ONLY:
            raise ValueError(f"{name}: derived by the optimiser, not settable (set b1/b2/lr_scale)")
        if name not in current:
            live = ", ".join(sorted(k for k in current if k not in _READ_ONLY))
            raise ValueError(f"{name}: not a live hyper-parameter here; live ones: {live}")
    _refuse_traced(values)  # before any host-side check reads a value
    for name, value in values.items():
        _CHECKS[name](name, value)  # warns (as the factories) or, for lr_scale, raises
    new = {**current, **_as_live(values)}
    return jax.tree.map(
        lambda n: n._replace(hyperparams=new) if _is_injected(n) else n, state, is_leaf=_is_injected
    )
