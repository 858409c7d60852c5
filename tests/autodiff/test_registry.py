"""The static VJP registry (C3.2): lookup, registration, missing rules, the required rule set."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import Primitive

from jaxparadigm.autodiff import (
    MissingVJPRule,
    get_vjp,
    grad,
    register_vjp,
    registered_primitives,
)
from jaxparadigm.autodiff.registry import unregister_vjp

# The list, under the names jax 0.10 really uses (pjit is "jit", custom calls as shown).
REQUIRED = """add sub mul div neg exp log sin cos tanh logistic pow integer_pow sqrt rsqrt max
dot_general reduce_sum reduce_max broadcast_in_dim reshape transpose squeeze expand_dims
convert_element_type select_n concatenate slice dynamic_slice jit pjit custom_jvp_call
custom_vjp_call""".split()


def test_required_rules_present():
    names = set(registered_primitives())
    assert not [n for n in REQUIRED if n not in names]


def test_registered_primitives_is_strictly_sorted_and_every_name_resolves():
    """The documented contract: sorted, no duplicates, each name resolves to a callable rule, and
    a newly registered rule (with an alias) appears in its sorted place under both names."""
    names = registered_primitives()
    assert all(a < b for a, b in zip(names, names[1:], strict=False))
    assert all(callable(get_vjp(n)) for n in names)
    try:
        register_vjp("zz_new_primitive", "aa_new_alias")(lambda ct, x, **p: (ct,))
        after = registered_primitives()
        assert after[0] == "aa_new_alias" and after[-1] == "zz_new_primitive"
        assert len(after) == len(names) + 2
        assert get_vjp("aa_new_alias") is get_vjp("zz_new_primitive")
    finally:
        unregister_vjp("zz_new_primitive")
        unregister_vjp("aa_new_alias")
    assert registered_primitives() == names


def test_names_match_the_primitives_jax_emits():
    """Every primitive in a jaxpr of the test programs has a rule under its real name."""

    @jax.custom_vjp
    def cv(x):
        return x * 2

    cv.defvjp(lambda x: (x * 2, None), lambda _, g: (2 * g,))

    def f(x, w):
        h = jax.nn.relu(jnp.tanh(x @ w)) + jax.nn.sigmoid(x @ w) ** 2
        return jnp.sum(jax.nn.log_softmax(h) + cv(h) + jnp.sqrt(h**2 + 1.0))

    jaxpr = jax.make_jaxpr(f)(jnp.ones((2, 3)), jnp.ones((3, 4)))
    names = {e.primitive.name for e in jaxpr.jaxpr.eqns}
    assert {"jit", "custom_jvp_call", "custom_vjp_call", "dot_general"} <= names
    for name in names:
        assert callable(get_vjp(name))


# A primitive of our own, so "no rule yet" stays true whatever rules the engine gains.
triple_p = Primitive("test_triple")
triple_p.def_impl(lambda x: x * 3)
triple_p.def_abstract_eval(lambda x: x)


def test_missing_rule_error_names_primitive_and_how_to_register():
    f = lambda x: jnp.sum(triple_p.bind(x))
    with pytest.raises(MissingVJPRule) as info:
        grad(f)(jnp.array([0.1, 0.2]))
    assert isinstance(info.value, NotImplementedError)
    assert info.value.primitive_name == "test_triple"
    assert "register_vjp('test_triple')" in str(info.value)


def test_registering_a_rule_makes_the_program_differentiable():
    f = lambda x: jnp.sum(triple_p.bind(x) ** 2)
    x = jnp.array([0.1, -0.3])
    try:

        @register_vjp("test_triple")
        def _triple_vjp(ct, x, **params):
            return (3.0 * ct,)

        assert "test_triple" in registered_primitives()
        np.testing.assert_allclose(grad(f)(x), 18.0 * x, rtol=1e-6)
    finally:
        unregister_vjp("test_triple")
    assert "test_triple" not in registered_primitives()


def test_duplicate_registration_and_bad_names():
    with pytest.raises(ValueError, match="already exists"):
        register_vjp("mul")(lambda ct, x, y, **p: (ct, ct))
    with pytest.raises(TypeError, match="primitive_name=''"):
        register_vjp("")
    with pytest.raises(TypeError, match="not callable"):
        register_vjp("some_new_primitive")(3)
    with pytest.raises(TypeError, match="expected a str"):
        get_vjp(3)


def test_conflicting_alias_leaves_no_partial_registration():
    """A later alias that conflicts must not leave the earlier names registered."""
    try:
        with pytest.raises(ValueError, match="'mul' already exists"):
            register_vjp("some_new_primitive", "mul")(lambda ct, x, **p: (ct,))
        assert "some_new_primitive" not in registered_primitives()
    finally:
        unregister_vjp("some_new_primitive")


def test_rules_are_plain_functions_of_arrays():
    """A rule is usable on its own: mul's VJP is (ct * y, ct * x)."""
    x, y, ct = jnp.array([2.0]), jnp.array([5.0]), jnp.array([1.5])
    dx, dy = get_vjp("mul")(ct, x, y)
    np.testing.assert_allclose(dx, [7.5])
    np.testing.assert_allclose(dy, [3.0])
