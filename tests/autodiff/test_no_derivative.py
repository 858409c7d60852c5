"""Operands a primitive has no derivative in (``registry.NoDerivative``, claim C3.2).

jax refuses ``polygamma``'s order ``m`` and ``betainc``'s ``a`` and ``b`` (``ValueError``). Each
program below differentiates such an operand through one path of our engine (the declared graph,
the define-by-run tape, an inner jit / scan / cond / remat sweep, forward mode): each must raise
one ``NotDifferentiable`` naming the primitive and the operand, where jax raises too -- never a
silent 0 (what ``func.grad`` returned for ``m`` before). The same programs with the operand held
constant must not be refused: there our gradient equals jax's.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.scipy import special as S

from jaxparadigm.autodiff import func
from jaxparadigm.autodiff.registry import NotDifferentiable

X = jnp.float32(2.0)
M = jnp.float32(1.0)


def _poly(m, x):
    return lax.polygamma(m, x)


def _scan(m_of):
    """Two polygamma steps in a scan; the order is a carry that ``m_of(x)`` starts."""

    def f(x):
        def body(c, _):
            m, y = c
            return (m, _poly(m, y)), None

        return lax.scan(body, (m_of(x), x), None, length=2)[0][1]

    return f


def _cond(m_of):
    return lambda x: lax.cond(x > 0, _poly, lambda m, y: y, m_of(x), x)


def _jit(m_of):
    return lambda x: jax.jit(_poly)(m_of(x), x)


def _remat(m_of):
    return lambda x: jax.checkpoint(_poly)(m_of(x), x)


def _branching(m_of):
    return lambda x: _poly(m_of(x), x) if x > 0 else x  # define-by-run: branches on a value


def _plain(m_of):
    return lambda x: _poly(m_of(x), x)


ACTIVE = lambda x: x * 0.0 + 1.0  # noqa: E731  the order depends on x: differentiated
CONSTANT = lambda x: M  # noqa: E731  the order is a constant operand of the inner program
WRAPPERS = {
    "plain": _plain,
    "jit": _jit,
    "scan": _scan,
    "cond": _cond,
    "remat": _remat,
    "define_by_run": _branching,
}
TRANSFORMS = {"grad": func.grad, "hessian": func.hessian, "jacfwd": func.jacfwd}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_differentiating_the_order_of_polygamma_is_refused(wrapper, transform):
    f = WRAPPERS[wrapper](ACTIVE)
    with pytest.raises(ValueError, match="polygamma gradient with respect to m"):
        jax.grad(f)(X)  # the oracle refuses this program too
    mode = "forward" if transform == "jacfwd" else "reverse"
    with pytest.raises(NotDifferentiable) as info:
        TRANSFORMS[transform](f)(X)
    msg = str(info.value)
    assert f"{mode} mode" in msg
    assert "primitive 'polygamma'" in msg
    assert "argument 'm' (operand 0" in msg
    assert (info.value.primitive_name, info.value.operand, info.value.position) == (
        "polygamma",
        "m",
        0,
    )


@pytest.mark.parametrize(
    "wrapper,transform",
    [(w, t) for w in WRAPPERS for t in TRANSFORMS if (w, t) != ("scan", "hessian")],
)
def test_a_constant_order_is_not_refused_inside_any_inner_program(wrapper, transform):
    """The order enters jit / scan / cond / remat as an operand of the inner program but is a
    constant of the outer one: the inner sweep differentiates only what the outer one does."""
    f = WRAPPERS[wrapper](CONSTANT)
    ours = TRANSFORMS[transform](f)(X)
    theirs = {"grad": jax.grad, "hessian": jax.hessian, "jacfwd": jax.jacfwd}[transform](f)(X)
    np.testing.assert_allclose(ours, theirs, rtol=2e-6)
    assert np.isfinite(ours) and ours != 0.0


@pytest.mark.parametrize("position,operand", [(0, "a"), (1, "b")])
def test_betainc_refuses_a_and_b_by_name_in_reverse_mode(position, operand):
    args = [jnp.float32(1.5), jnp.float32(2.0), jnp.float32(0.4)]

    def f(v):
        full = list(args)
        full[position] = v
        return S.betainc(*full)

    with pytest.raises(NotDifferentiable, match=f"argument '{operand}' \\(operand {position}"):
        func.grad(f)(args[position])
    assert float(func.grad(lambda x: S.betainc(args[0], args[1], x))(args[2])) == float(
        jax.grad(lambda x: S.betainc(args[0], args[1], x))(args[2])
    )


@pytest.mark.parametrize("through", [lax.stop_gradient, lax.floor], ids=["stop_gradient", "floor"])
@pytest.mark.parametrize("wrapper", ["plain", "define_by_run"])
def test_an_order_reached_only_through_a_zero_derivative_is_a_constant(through, wrapper):
    """jax's symbolic zero: an operand that depends on x only through stop_gradient / floor is
    not differentiated, so it is not refused (the activity analysis stops there)."""
    f = WRAPPERS[wrapper](lambda x: through(x) * 0.0 + 2.0)
    np.testing.assert_allclose(func.grad(f)(X), jax.grad(f)(X), rtol=1e-6)
