"""Adam and AdamW with independently chosen moment storage dtypes (C4.2).

Kingma & Ba, "Adam: A Method for Stochastic Optimization", 2014; Loshchilov & Hutter,
"Decoupled Weight Decay Regularization", 2019. With default dtypes the arithmetic mirrors
``optax.scale_by_adam`` op for op, so fp32 trajectories are bitwise equal to ``optax.adam``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxparadigm.optim.adam_torch import AdamTorchState
from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import (
    accept_number,
    check_decay,
    check_nesterov,
    storage_dtype,
    warn_value,
)
from jaxparadigm.optim.learning_rate import scale_by_learning_rate
from jaxparadigm.optim.param_dtypes import abs_sq, coefficient, require_inexact
from jaxparadigm.optim.weight_decay import add_decayed_weights


class ScaleByAdamState(NamedTuple):
    """Adam state: int32 step ``count``, first moment ``mu``, second moment ``nu`` (C4.2)."""

    count: jax.Array  # type: ignore[assignment]  # field shadows tuple.count, as in optax states
    mu: Any
    nu: Any


class AdamCoefficients(NamedTuple):
    """Adam's scalar coefficients (C4.2): Python floats, or float32 arrays for live ones.

    ``one_minus_b1``/``one_minus_b2`` are ``1 - b`` computed once in float64 and rounded, which
    is what the static ``scale_by_adam`` folds into its program as constants (``1 - b1`` computed
    in float32 from a float32 ``b1`` rounds differently: the drift optax #583 reports between
    ``adam`` and ``inject_hyperparams(adam)``).
    """

    b1: Any
    one_minus_b1: Any
    b2: Any
    one_minus_b2: Any
    eps: Any
    eps_root: Any


def adam_coefficients(
    b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0
) -> AdamCoefficients:
    """Adam's coefficients as optax takes them: any real numbers (C4.2).

    Host numbers become Python floats (``1 - b`` in float64); a traced value (Adam built inside
    ``jax.jit``/``jax.grad``) is kept as given. Warns, as optax computes on: ``b1``/``b2`` outside
    ``[0, 1)``, ``eps < 0`` (the denominator can cross 0), ``eps = eps_root = 0`` (a zero gradient
    gives ``0 / 0``), ``eps_root < 0`` (``sqrt`` of a negative), NaN or infinite values.
    """
    b1 = _as_coefficient(b1, check_decay("b1", b1))
    b2 = _as_coefficient(b2, check_decay("b2", b2))
    root = accept_number(
        "eps_root",
        eps_root,
        lambda x: "sqrt(v + eps_root) is NaN once v + eps_root < 0" if x < 0 else None,
    )

    def eps_problem(x: float) -> str | None:
        if x < 0:
            return "a negative eps lets the denominator sqrt(v) + eps cross 0"
        if x == 0 and root == 0:
            return "with eps = eps_root = 0 a zero gradient gives 0 / 0 = NaN"
        return None

    eps = _as_coefficient(eps, accept_number("eps", eps, eps_problem))
    return AdamCoefficients(b1, 1 - b1, b2, 1 - b2, eps, _as_coefficient(eps_root, root))


def _as_coefficient(value: Any, number: float | None) -> Any:
    """The host float of a checked number, or the (traced) value itself."""
    return value if number is None else number


@functools.partial(jax.jit, inline=True)
def _bias_correction(moments: Any, decay: float, count: jax.Array) -> Any:
    """``m / (1 - decay**count)`` for a whole tree, ``decay**count`` in float32.

    One jitted call over the tree, as optax does: XLA's choice between a true division and a
    multiply by the reciprocal depends on how many leaves share the scalar, so the tree-level
    structure is part of being bitwise equal to optax.
    """
    correction = 1 - decay**count
    return jax.tree.map(lambda t: t / correction.astype(t.dtype), moments)


def _compute_dtype(g: jax.Array, stored: Any = None) -> Any:
    """Moments are updated in at least float32 whatever their storage dtype (C4.2).

    A complex store (``mu_dtype="complex64"`` for real params) makes the moment complex, as
    optax's ``(1 - b1) g + b1 m`` promotes to it: computing it in the real part alone rounds
    differently from optax's complex ops (by hundreds of ulp after 10 steps).
    """
    dtype = jnp.promote_types(g.dtype, jnp.float32)
    if stored is not None and jnp.iscomplexobj(stored):
        dtype = jnp.promote_types(dtype, stored.dtype)
    return dtype


def _cast_to_storage(value: jax.Array, stored: jax.Array) -> jax.Array:
    """Cast a new moment to its storage dtype; a real store keeps the real part (as optax's
    ``astype``, without numpy's ``ComplexWarning``)."""
    if jnp.iscomplexobj(value) and not jnp.iscomplexobj(stored):
        value = value.real
    return value.astype(stored.dtype)


def _as(stored: jax.Array, dtype: Any) -> jax.Array:
    """A stored moment in the compute dtype; a complex store read by real gradients gives its real
    part (the imaginary part of a moment of real gradients is 0)."""
    if jnp.iscomplexobj(stored) and not jnp.issubdtype(dtype, jnp.complexfloating):
        stored = stored.real
    return stored.astype(dtype)


def init_adam_state(params: Any, mu_dtype: Any, nu_dtype: Any) -> ScaleByAdamState:
    """Zero moments shaped like ``params`` (``mu`` in ``mu_dtype``, ``nu`` in ``nu_dtype``; None:
    the params' dtype); refuses integer params. As optax, complex params with a real ``mu_dtype``
    are accepted with a ``UserWarning``: the imaginary part of ``mu`` is dropped at every step."""
    require_inexact("params", params)
    if mu_dtype is not None and not jnp.issubdtype(mu_dtype, jnp.complexfloating):
        if any(jnp.iscomplexobj(leaf) for leaf in jax.tree.leaves(params)):
            warn_value(
                "mu_dtype",
                jnp.dtype(mu_dtype).name,
                "complex params keep only the real part of their first moment (optax drops "
                "the imaginary part the same way); use mu_dtype=None or a complex dtype",
            )
    mu = jax.tree.map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
    nu = jax.tree.map(lambda p: jnp.zeros_like(p, dtype=nu_dtype), params)
    return ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)


def _nesterov_moment(mu: Any, updates: Any, c: AdamCoefficients, count_inc: jax.Array) -> Any:
    """NAdam's first moment (Dozat 2016), optax's form and op order:
    ``m_hat = b1 m / (1 - b1^(t+1)) + (1 - b1) g / (1 - b1^t)``."""
    corrected_mu = _bias_correction(mu, c.b1, safe_increment(count_inc))
    corrected_g = _bias_correction(updates, c.b1, count_inc)
    return jax.tree.map(
        lambda m, g: (
            None
            if m is None
            else coefficient(c.b1, m.dtype) * m + coefficient(c.one_minus_b1, g.dtype) * g
        ),
        corrected_mu,
        corrected_g,
        is_leaf=lambda x: x is None,
    )


def update_adam_state(
    updates: Any, state: ScaleByAdamState, c: AdamCoefficients, nesterov: bool = False
) -> tuple[Any, ScaleByAdamState]:
    """One Adam direction step with coefficients ``c`` (floats or arrays), optax's op order.

    ``m <- (1-b1) g + b1 m``; ``v <- (1-b2) |g|^2 + b2 v``; ``u = m_hat / (sqrt(v_hat + eps_root)
    + eps)`` (``nesterov``: NAdam's ``m_hat``, see ``_nesterov_moment``); leaves whose gradient is
    None keep their moments and get a None update.
    """
    require_inexact("updates", updates)
    is_none = lambda x: x is None

    def first_moment(g, t):
        if g is None:
            return None
        # ``g**1`` is kept on purpose: it is optax's op sequence, and XLA's fusion (hence the
        # rounding of ``m / (1 - b1^t)``) depends on it; bitwise equality with optax needs it.
        cd = _compute_dtype(g, t)
        return coefficient(c.one_minus_b1, g.dtype) * (g**1) + coefficient(c.b1, cd) * _as(t, cd)

    def second_moment(g, t):
        if g is None:
            return None
        cd = _compute_dtype(g)
        sq = abs_sq(g)
        return coefficient(c.one_minus_b2, sq.dtype) * sq + coefficient(c.b2, cd) * _as(t, cd)

    mu = jax.tree.map(first_moment, updates, state.mu, is_leaf=is_none)
    nu = jax.tree.map(second_moment, updates, state.nu, is_leaf=is_none)
    count_inc = safe_increment(state.count)

    if nesterov:
        mu_hat = _nesterov_moment(mu, updates, c, count_inc)
    else:
        mu_hat = _bias_correction(mu, c.b1, count_inc)
    nu_hat = _bias_correction(nu, c.b2, count_inc)

    def direction(g, m, v):
        if m is None:
            return None
        eps_root, eps = coefficient(c.eps_root, v.dtype), coefficient(c.eps, v.dtype)
        return _cast_to_storage(m / (jnp.sqrt(v + eps_root) + eps), g)

    new_updates = jax.tree.map(direction, updates, mu_hat, nu_hat, is_leaf=is_none)
    cast_like = lambda t, stored: stored if t is None else _cast_to_storage(t, stored)
    mu = jax.tree.map(cast_like, mu, state.mu, is_leaf=is_none)
    nu = jax.tree.map(cast_like, nu, state.nu, is_leaf=is_none)
    return new_updates, ScaleByAdamState(count=count_inc, mu=mu, nu=nu)


def scale_by_adam(
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    mu_dtype: Any = None,
    *,
    nesterov: bool = False,
    nu_dtype: Any = None,
) -> optax.GradientTransformation:
    """Rescale updates by Adam's bias-corrected moments (C4.2).

    ``m <- b1 m + (1-b1) g``; ``v <- b2 v + (1-b2) |g|^2``;
    ``u = m_hat / (sqrt(v_hat + eps_root) + eps)`` with ``m_hat = m / (1 - b1^t)``,
    ``v_hat = v / (1 - b2^t)``. Moments are computed in float32 (or wider) and only *stored* in
    ``mu_dtype``/``nu_dtype`` (None: the params' dtype; else any dtype optax stores a moment in,
    canonicalised as optax does: float64 is float32 while x64 is off; an integer or bool store
    truncates the moment, as in optax, with a ``UserWarning``; see ``storage_dtype``).
    Coefficients are taken as optax takes them (see ``adam_coefficients``).

    Complex params follow optax: ``|g|^2 = (conj(g) g).real`` in ``v``; ``mu_dtype=None`` keeps
    ``mu`` complex; a real ``mu_dtype`` is accepted as optax accepts it (the imaginary part of
    ``mu`` is dropped at each step; a ``UserWarning`` at init), and a complex ``mu_dtype`` for
    real params stores a complex ``mu`` with zero imaginary part, computed in complex as optax
    computes it (the updates stay real, where optax's become complex; their real parts are
    bitwise optax's). ``nesterov=True`` is NAdam (Dozat 2016), as optax's. Integer params
    or gradients raise ``TypeError``.
    """
    coefficients = adam_coefficients(b1, b2, eps, eps_root)
    mu_dtype = storage_dtype("mu_dtype", mu_dtype)
    nu_dtype = storage_dtype("nu_dtype", nu_dtype)
    nesterov = check_nesterov(nesterov)

    def init_fn(params):
        return init_adam_state(params, mu_dtype, nu_dtype)

    def update_fn(updates, state, params=None):
        del params
        return update_adam_state(updates, state, coefficients, nesterov)

    return optax.GradientTransformation(init_fn, update_fn)


def adam(
    learning_rate: float | Callable[[Any], Any] | None,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    mu_dtype: Any = None,
    *,
    nesterov: bool = False,
    nu_dtype: Any = None,
) -> optax.GradientTransformation:
    """Adam (C4.2): ``p <- p - lr * m_hat / (sqrt(v_hat + eps_root) + eps)``.

    ``scale_by_adam`` followed by ``scale_by_learning_rate``; bitwise equal to ``optax.adam`` in
    float32 with default dtypes. Positional arguments are optax's, in optax's order; ``nu_dtype``
    (ours) is keyword-only, so optax code ports unchanged.
    """
    return optax.chain(
        scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov, nu_dtype=nu_dtype),
        scale_by_learning_rate(learning_rate),
    )


def adamw(
    learning_rate: float | Callable[[Any], Any] | None,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    mu_dtype: Any = None,
    weight_decay: float = 1e-4,
    mask: Any | Callable[[Any], Any] | None = None,
    *,
    nesterov: bool = False,
    nu_dtype: Any = None,
) -> optax.GradientTransformation:
    """AdamW (C4.2): ``p <- p - lr * (m_hat / (sqrt(v_hat + eps_root) + eps) + wd * p)``.

    Decoupled weight decay (Loshchilov & Hutter) on the leaves selected by ``mask``; bitwise equal
    to ``optax.adamw`` in float32 with default dtypes.
    """
    return optax.chain(
        scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov, nu_dtype=nu_dtype),
        add_decayed_weights(weight_decay, mask),
        scale_by_learning_rate(learning_rate),
    )


def _find_adam_states(state: Any) -> list[ScaleByAdamState | AdamTorchState]:
    found: list[ScaleByAdamState | AdamTorchState] = []

    def visit(node: Any) -> None:
        if isinstance(node, (ScaleByAdamState, AdamTorchState)):
            found.append(node)
        elif isinstance(node, (tuple, list)):
            for child in node:
                visit(child)
        elif isinstance(node, dict):
            for child in node.values():
                visit(child)

    visit(state)
    return found


def adam_state_report(state: Any) -> dict[str, dict[str, Any]]:
    """How Adam's moments ``mu`` and ``nu`` are stored in an optimiser state (C4.2).

    For each moment, over its non-None leaves: ``dtype`` (the stored dtype name; several names
    joined by ``","`` in sorted order when leaves differ), ``bytes`` (``sum(leaf.nbytes)``),
    ``entries`` (``sum(leaf.size)``) and ``zero_fraction`` (entries exactly equal to 0, divided
    by ``entries``; 0.0 when there are none). ``state`` is a ``ScaleByAdamState``, an
    ``adam_torch_style`` state, or any optimiser state (e.g. a chain's tuple, a dict) holding
    exactly one of them; ``ValueError`` otherwise. Forces a device-to-host copy.
    """
    found = _find_adam_states(state)
    if len(found) != 1:
        raise ValueError(
            f"state={type(state).__name__}: expected exactly one Adam state inside, "
            f"found {len(found)}"
        )
    adam_state = found[0]
    report: dict[str, dict[str, Any]] = {}
    for name in ("mu", "nu"):
        leaves = [leaf for leaf in jax.tree.leaves(getattr(adam_state, name)) if leaf is not None]
        dtypes = sorted({str(jnp.asarray(leaf).dtype) for leaf in leaves})
        entries = int(sum(np.size(leaf) for leaf in leaves))
        zeros = int(sum(int(jnp.sum(jnp.asarray(leaf) == 0)) for leaf in leaves))
        report[name] = {
            "dtype": dtypes[0] if len(dtypes) == 1 else ",".join(dtypes),
            "bytes": int(sum(jnp.asarray(leaf).nbytes for leaf in leaves)),
            "entries": entries,
            "zero_fraction": zeros / entries if entries else 0.0,
        }
    return report
