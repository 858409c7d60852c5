"""Rules for the regularized incomplete gamma and beta functions (C3.2).

jax's own formulas (``jax/_src/lax/special.py``: ``igamma_gradx``, ``igamma_grada``,
``igammac_*``, ``betainc_gradx``), the JVP as ``t * d`` and the VJP as ``ct * d``, written with
differentiable ``lax`` ops so the backward program can be differentiated again (C3.3)::

    P(a, x) = igamma(a, x):    dP/dx = exp(-x + (a - 1) log x - lgamma(a))
                               dP/da = igamma_grad_a(a, x)
    Q(a, x) = igammac(a, x) = 1 - P(a, x):   dQ/dx = -dP/dx,  dQ/da = -dP/da
    I_x(a, b) = regularized_incomplete_beta(a, b, x):
                               dI/dx = exp((b - 1) log1p(-x) + (a - 1) log x - lbeta(a, b))

As in jax, ``igamma_grad_a`` has no derivative rule (so ``P`` is differentiable once in ``a``,
any number of times in ``x``), and ``betainc`` has no derivative in ``a`` or ``b`` (jax raises
``ValueError``): both rules mark them ``NoDerivative``, so either mode raises
``registry.NotDifferentiable`` naming the operand when ``a`` or ``b`` is differentiated.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import NoDerivative, register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import partials_rule
from jaxparadigm.autodiff.unbroadcast import unbroadcast

__all__: list[str] = []


def igamma_dx(a, x):
    """dP(a, x)/dx = x^(a-1) e^(-x) / Gamma(a), in jax's log-space form."""
    return jnp.exp(-x + (a - 1.0) * jnp.log(x) - lax.lgamma(a))


def betainc_dx(a, b, x):
    """dI_x(a, b)/dx = x^(a-1) (1-x)^(b-1) / B(a, b), in jax's log-space form."""
    lbeta = lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)
    return jnp.exp((b - 1.0) * jnp.log1p(-x) + (a - 1.0) * jnp.log(x) - lbeta)


@register_vjp(P.igamma_p)
def _igamma_vjp(ct, a, x, **params):
    return unbroadcast(ct * lax.igamma_grad_a(a, x), a), unbroadcast(ct * igamma_dx(a, x), x)


@register_vjp(P.igammac_p)
def _igammac_vjp(ct, a, x, **params):
    return unbroadcast(-ct * lax.igamma_grad_a(a, x), a), unbroadcast(-ct * igamma_dx(a, x), x)


@register_vjp(P.regularized_incomplete_beta_p)
def _betainc_vjp(ct, a, b, x, **params):
    """``ct * dI/dx`` for ``x``; none in ``a`` and ``b`` (jax refuses them too)."""
    return NoDerivative("a"), NoDerivative("b"), unbroadcast(ct * betainc_dx(a, b, x), x)


register_jvp(P.igamma_p)(
    partials_rule(
        P.igamma_p,
        lambda t, a, x, y: t * lax.igamma_grad_a(a, x),
        lambda t, a, x, y: t * igamma_dx(a, x),
    )
)
register_jvp(P.igammac_p)(
    partials_rule(
        P.igammac_p,
        lambda t, a, x, y: -t * lax.igamma_grad_a(a, x),
        lambda t, a, x, y: -t * igamma_dx(a, x),
    )
)
register_jvp(P.regularized_incomplete_beta_p)(
    partials_rule(
        P.regularized_incomplete_beta_p,
        NoDerivative("a"),
        NoDerivative("b"),
        lambda t, a, b, x, y: t * betainc_dx(a, b, x),
    )
)
