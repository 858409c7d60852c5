"""The torch convention adapter and the opt-in holomorphy check (issue 36 items 2, 3; C3.2).

* ``func.grad(f, convention="torch")`` returns what ``torch.func.grad`` returns for complex inputs,
  ``dL/dx + i dL/dy`` (the conjugate of jax's): PyTorch oracle below (crosscheck);
* ``check_holomorphic`` passes for exp/sin/polynomials and raises ``ValueError`` naming the
  function for conj/abs/real, where ``jax.grad(holomorphic=True)`` answers silently (jax#3293).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.autodiff import func
from jaxparadigm.autodiff.complex_conventions import check_holomorphic, to_torch_convention
from jaxparadigm.autodiff.tape.control_flow_error import ValueControlFlowError

Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.7 - 1.1j], np.complex64)

LOSSES = {
    "abs2": (lambda z: jnp.sum(jnp.abs(z) ** 2), lambda z: (z.abs() ** 2).sum()),
    "real_exp": (
        lambda z: jnp.sum(jnp.real(jnp.exp(z) * z)),
        lambda z: (z.exp() * z).real.sum(),
    ),
    "imag_sq": (lambda z: jnp.sum(jnp.imag(z * z)), lambda z: (z * z).imag.sum()),
    "abs_sin": (lambda z: jnp.sum(jnp.abs(jnp.sin(z))), lambda z: z.sin().abs().sum()),
    "angle": (lambda z: jnp.sum(jnp.angle(z)), lambda z: z.angle().sum()),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_torch_convention_is_the_conjugate_of_jax(name):
    f = LOSSES[name][0]
    jax_style = func.grad(f)(Z)
    np.testing.assert_allclose(jax_style, jax.grad(f)(Z), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(func.grad(f, convention="torch")(Z), np.conj(jax_style))
    g, v = func.grad_and_value(f, convention="torch")(Z)
    np.testing.assert_allclose(g, np.conj(jax_style))
    np.testing.assert_allclose(v, f(Z), rtol=1e-6)


def test_torch_convention_leaves_real_leaves_and_aux_alone():
    f = lambda x, z: (jnp.sum(x * jnp.abs(z) ** 2), jnp.sum(x))
    x = jnp.array([1.0, 2.0, 3.0])
    (gx, gz), aux = func.grad(f, argnums=(0, 1), has_aux=True, convention="torch")(x, Z)
    (rx, rz), _ = func.grad(f, argnums=(0, 1), has_aux=True)(x, Z)
    assert aux == 6.0
    np.testing.assert_array_equal(gx, rx)
    np.testing.assert_array_equal(gz, np.conj(rz))
    assert to_torch_convention(1.5) == 1.5


def test_convention_is_checked():
    with pytest.raises(ValueError, match=r"convention='pytorch'.*\['jax', 'torch'\]"):
        func.grad(jnp.sum, convention="pytorch")
    with pytest.raises(ValueError, match="convention='torch' with holomorphic=True"):
        func.grad(jnp.exp, holomorphic=True, convention="torch")


@pytest.mark.crosscheck
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_torch_convention_equals_torch(name):
    """Oracle: torch.func.grad and torch.autograd on the same loss."""
    torch = pytest.importorskip("torch")
    f, f_torch = LOSSES[name]
    ref = torch.func.grad(f_torch)(torch.from_numpy(Z)).numpy()
    t = torch.from_numpy(Z.copy()).requires_grad_(True)
    f_torch(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(func.grad(f, convention="torch")(Z), ref, rtol=1e-5, atol=1e-6)
    # and jax's convention is the conjugate of torch's, not equal to it (for these losses)
    assert not np.allclose(func.grad(f)(Z), ref, rtol=1e-3, atol=1e-4)


HOLOMORPHIC = {
    "exp": jnp.exp,
    "sin": jnp.sin,
    "poly": lambda z: 3 * z**3 - (1 + 2j) * z + 0.5j,
    "product": lambda z: z * jnp.roll(z, 1) + jnp.exp(z) / (z + 4),
}
NOT_HOLOMORPHIC = {
    "conj": jnp.conj,
    "abs": lambda z: jnp.abs(z).astype(z.dtype),
    "real": lambda z: jnp.real(z).astype(z.dtype),
    "z_times_conj": lambda z: z * jnp.conj(z),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_functions_pass_the_check(name, dtype):
    f = HOLOMORPHIC[name]
    with jax.enable_x64(dtype == np.complex128):
        z = jnp.asarray(Z, dtype)
        assert check_holomorphic(f, z) is None
        got = func.jacfwd(f, holomorphic=True, check_holomorphic=True)(z)
        np.testing.assert_allclose(got, jax.jacfwd(f, holomorphic=True)(z), rtol=1e-4, atol=1e-5)
        s = lambda z: jnp.sum(f(z))
        got = func.grad(s, holomorphic=True, check_holomorphic=True)(z)
        np.testing.assert_allclose(got, jax.grad(s, holomorphic=True)(z), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(NOT_HOLOMORPHIC))
def test_non_holomorphic_functions_are_caught(name):
    f = NOT_HOLOMORPHIC[name]
    z = jnp.asarray(Z)
    jax.jacfwd(f, holomorphic=True)(z)  # jax answers silently (jax#3293)
    with pytest.raises(
        ValueError, match=r"check_holomorphic: .*is not holomorphic.*Cauchy-Riemann"
    ):
        check_holomorphic(f, z)
    for transform in (func.jacfwd, func.jacrev):
        with pytest.raises(ValueError, match="is not holomorphic"):
            transform(f, holomorphic=True, check_holomorphic=True)(z)
    with pytest.raises(ValueError, match="is not holomorphic"):
        func.grad(lambda z: jnp.sum(f(z)), holomorphic=True, check_holomorphic=True)(z)


def my_conjugating_model(z, scale=2.0):
    return jnp.conj(z) * scale


def test_the_error_names_the_function():
    with pytest.raises(ValueError, match="`my_conjugating_model` .*is not holomorphic"):
        check_holomorphic(my_conjugating_model, jnp.asarray(Z))


@pytest.mark.parametrize("kwargs", [{}, {"scale": 3.0}], ids=["no_kwargs", "kwargs"])
@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd"])
def test_the_transforms_check_names_the_users_function(transform, kwargs):
    """``check_holomorphic=True`` of a transform names the function it was given (its qualname,
    file and line), not the transform's internal wrapper (``_with_holomorphy_check.<locals>``)."""
    f = my_conjugating_model
    if transform == "grad":

        def f(z, scale=2.0):
            return jnp.sum(my_conjugating_model(z, scale))

    wrapped = getattr(func, transform)(f, holomorphic=True, check_holomorphic=True)
    with pytest.raises(ValueError, match="is not holomorphic") as info:
        wrapped(jnp.asarray(Z), **kwargs)
    msg = str(info.value)
    assert f"`{f.__qualname__}` ({f.__code__.co_filename}:{f.__code__.co_firstlineno})" in msg
    assert "<locals>.checked" not in msg and "<lambda>" not in msg


def test_hessian_under_jit_names_the_users_function():
    def my_branchy(x):
        return x * x if x > 0 else -x

    with pytest.raises(ValueControlFlowError, match="the function `.*my_branchy`") as info:
        jax.jit(func.hessian(my_branchy))(jnp.float32(1.0))
    assert "jac_fn" not in str(info.value)


def test_check_holomorphic_arguments():
    with pytest.raises(ValueError, match="check_holomorphic=True needs holomorphic=True"):
        func.grad(jnp.sum, check_holomorphic=True)
    with pytest.raises(TypeError, match="argument 0 has dtype float32; expected a complex"):
        check_holomorphic(jnp.exp, jnp.ones(2))
    with pytest.raises(TypeError, match="is not callable"):
        check_holomorphic(3, jnp.asarray(Z))
    # argnums picks the complex argument; the other is held fixed
    check_holomorphic(lambda a, z: a * jnp.exp(z), 2.0, jnp.asarray(Z), argnums=1)
    with pytest.raises(ValueError, match="not holomorphic"):
        check_holomorphic(lambda a, z: a * jnp.conj(z), 2.0, jnp.asarray(Z), argnums=1)
