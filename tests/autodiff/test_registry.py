"""The static VJP registry (C3.2): lookup, registration, missing rules, the required rule set."""

import ast
import importlib
import operator
import pathlib

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
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


def test_a_primitive_object_is_keyed_by_its_name():
    """register/get take the primitive object or its name: one table key, ``.name``."""
    try:
        register_vjp(triple_p)(lambda ct, x, **p: (3.0 * ct,))
        assert "test_triple" in registered_primitives()
        assert get_vjp(triple_p) is get_vjp("test_triple")
    finally:
        unregister_vjp(triple_p)
    assert "test_triple" not in registered_primitives()
    assert get_vjp(P.sin_p) is get_vjp("sin")
    with pytest.raises(
        TypeError, match=r"primitive_name=3\.5; expected a str .* or a jax Primitive"
    ):
        register_vjp(3.5)


def test_one_zero_rule_list_for_both_tables():
    """Every primitive of ``ZERO_DERIVATIVE`` has a zero rule in both tables, and no other
    primitive has one: no VJP/JVP list can drift from the other again."""
    from jaxparadigm.autodiff.registry import JVP_RULES, VJP_RULES, get_jvp
    from jaxparadigm.autodiff.rules.zero_derivative import ZERO_DERIVATIVE

    names = {p.name for p in ZERO_DERIVATIVE}
    assert len(names) == len(ZERO_DERIVATIVE) == 32
    zero_vjp = {n for n, r in VJP_RULES.rules.items() if r.__name__ == "_zero_vjp"}
    zero_jvp = {n for n, r in JVP_RULES.rules.items() if r.__name__.endswith("_zero_jvp")}
    assert zero_vjp == zero_jvp == names
    x = jnp.array([1.5, -2.0])
    assert get_vjp(P.floor_p)(jnp.ones(2), x) == (None,)
    out, t = get_jvp(P.floor_p)([x], [jnp.ones(2)])
    np.testing.assert_array_equal(out, [1.0, -2.0])
    assert t is None


def test_bitcast_between_float_dtypes_has_a_zero_gradient_like_jax():
    """The reconciled zero list gave ``bitcast_convert_type`` a VJP (formerly only a JVP):
    a float16 -> bfloat16 reinterpretation carries no gradient, as jax's ``defjvp_zero``."""
    f = lambda x: jnp.sum(lax.bitcast_convert_type(x, jnp.bfloat16).astype(jnp.float32) + x)
    x = jnp.array([0.5, -1.25, 3.0], jnp.float16)
    ours, ref = grad(f)(x), jax.grad(f)(x)
    assert ours.dtype == ref.dtype == jnp.float16
    np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(ref, np.float32))
    np.testing.assert_array_equal(np.asarray(ours, np.float32), [1.0, 1.0, 1.0])


def _registered_keys(path):
    """``(table, primitive name)`` for each register_vjp/register_jvp call in a rule module; a
    loop variable is resolved to the elements of the tuple (or the keys of the dict) it runs
    over, and each key expression (the primitive and its aliases) to the object it names."""
    module = importlib.import_module(f"jaxparadigm.autodiff.rules.{path.stem}")
    tree = ast.parse(path.read_text())
    assigned = {
        t.id: node.value
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name) and node.value is not None
    }
    keys = set()

    def add(table, expr):
        if isinstance(expr, ast.Constant):
            keys.add((table, expr.value))
        else:
            keys.add((table, operator.attrgetter(ast.unparse(expr))(module).name))

    def calls(node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.args:
                table = {"register_vjp": "VJP", "register_jvp": "JVP"}.get(sub.func.id)
                if table:
                    yield from ((table, arg) for arg in sub.args)  # the key and its aliases

    loop_vars = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            it = node.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute):
                it = it.func.value  # TABLE.items()
            it = assigned.get(it.id, it) if isinstance(it, ast.Name) else it
            elts = it.keys if isinstance(it, ast.Dict) else getattr(it, "elts", [])
            target = node.target.elts[0] if isinstance(node.target, ast.Tuple) else node.target
            loop_vars.add(target.id)
            for table, arg in calls(node):
                if isinstance(arg, ast.Name) and arg.id == target.id:
                    for e in elts:
                        add(table, e)
    for table, arg in calls(tree):
        if not (isinstance(arg, ast.Name) and arg.id in loop_vars):
            add(table, arg)
    return keys


def test_a_primitive_s_two_rules_live_in_one_module():
    """Issue 33: a family's VJP and JVP rules sit side by side -- every primitive registered in
    both tables is registered in both by the same rule module."""
    from jaxparadigm.autodiff import registered_jvp_primitives, rules

    where: dict = {}
    for path in sorted(pathlib.Path(rules.__file__).parent.glob("*.py")):
        for table, name in _registered_keys(path):
            where.setdefault(name, {}).setdefault(table, set()).add(path.name)
    both = {k: v for k, v in where.items() if set(v) == {"VJP", "JVP"}}
    assert {k: v for k, v in both.items() if v["VJP"] != v["JVP"]} == {}
    # the parse found every key of both tables
    assert set(registered_primitives()) & set(registered_jvp_primitives()) == set(both)
