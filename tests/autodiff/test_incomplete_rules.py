"""The incomplete gamma / beta rules (``rules/incomplete.py``, issue 36 item 4) and lgamma,
digamma, polygamma at order 2: both modes against jax and against central differences (EPS 1e-4,
``grad_checks.check_grads``), plus jax's own refusals (``igamma_grad_a`` has no rule; betainc has no
derivative in ``a`` or ``b``: ``test_no_derivative`` covers the refusal in every sweep)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.scipy import special as S

from jaxparadigm.autodiff import MissingVJPRule, func
from jaxparadigm.autodiff.registry import NotDifferentiable
from tests.autodiff.grad_checks import check_grads

A = np.array([0.7, 1.5, 3.0])
X = np.array([0.4, 1.2, 2.5])


@pytest.mark.parametrize("op", [lax.igamma, lax.igammac], ids=["igamma", "igammac"])
def test_igamma_in_x_order_2(op):
    check_grads(lambda x: op(jnp.asarray(A), x), (X,), order=2)


@pytest.mark.parametrize("op", [S.gammainc, S.gammaincc], ids=["gammainc", "gammaincc"])
def test_igamma_in_a_and_x_order_1(op):
    """d/da is igamma_grad_a (no rule of its own, in jax either): order 1 in both operands."""
    check_grads(op, (A, X), order=1, fd_tol=1e-3)


def test_igamma_second_order_in_a_is_refused_as_in_jax():
    f = lambda a: jnp.sum(func.grad(lambda a: jnp.sum(S.gammainc(a, jnp.asarray(X))))(a))
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
        jax.grad(f)(A)
    with pytest.raises(MissingVJPRule, match="igamma_grad_a"):
        func.grad(f)(A)


def test_betainc_in_x_order_2():
    a, b = jnp.asarray([0.8, 2.0, 3.5]), jnp.asarray([1.5, 0.9, 2.0])
    check_grads(lambda x: S.betainc(a, b, x), (np.array([0.2, 0.5, 0.7]),), order=2)


def test_betainc_in_a_is_refused():
    """jax raises ValueError; so do both our modes, naming the primitive and the operand."""
    x = jnp.asarray([0.3, 0.6])
    f = lambda a: jnp.sum(S.betainc(a, 2.0, x))
    with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
        jax.grad(f)(jnp.asarray([1.0, 2.0]))
    with pytest.raises(NotDifferentiable, match="forward mode: .*'regularized_incomplete_beta'"):
        func.jvp(f, (jnp.asarray([1.0, 2.0]),), (jnp.ones(2),))
    with pytest.raises(NotDifferentiable, match="reverse mode: .*argument 'a' \\(operand 0"):
        func.grad(f)(jnp.asarray([1.0, 2.0]))


@pytest.mark.parametrize(
    "op",
    [lax.lgamma, lax.digamma, lambda x: lax.polygamma(2.0 * jnp.ones_like(x), x)],
    ids=["lgamma", "digamma", "polygamma2"],
)
def test_gamma_family_order_2(op):
    check_grads(op, (np.array([0.3, 1.7, 4.2]),), order=2)


def test_zeta_through_jax_scipy_order_1():
    """jax.scipy.special.zeta is a custom_jvp (the raw zeta primitive has no rule in jax)."""
    check_grads(lambda q: S.zeta(3.0, q), (np.array([1.5, 2.5]),), order=1, fd_tol=1e-3)
