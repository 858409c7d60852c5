"""MLP: shapes over random widths (hypothesis), forward pass vs a numpy oracle, input errors."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from flax import nnx
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.models.mlp import MLP


def _numpy_forward(params, x):
    """Independent oracle: the same network written with numpy and the tanh-form GELU."""

    def gelu(h):
        return 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))

    h = np.asarray(x, np.float64)
    layers = params.get("layers", {})
    for i in range(len(layers)):
        h = gelu(h @ np.asarray(layers[i]["kernel"]) + np.asarray(layers[i]["bias"]))
    return h @ np.asarray(params["head"]["kernel"]) + np.asarray(params["head"]["bias"])


class MLPTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.parameters(((3,),), ((8, 5),), ((),))
    def test_forward_matches_numpy(self, hidden):
        model = MLP(4, hidden, 3, rngs=nnx.Rngs(1))
        graphdef, state = nnx.split(model)
        params = nnx.to_pure_dict(state)
        x = jax.random.normal(jax.random.PRNGKey(0), (5, 4))
        out = self.variant(lambda p, x: nnx.merge(graphdef, p)(x))(params, x)
        chex.assert_shape(out, (5, 3))
        chex.assert_type(out, jnp.float32)
        np.testing.assert_allclose(out, _numpy_forward(params, x), rtol=2e-5, atol=2e-5)

    def test_bfloat16_compute_returns_float32_close_to_float32(self):
        x = jax.random.normal(jax.random.PRNGKey(0), (6, 2))
        f32 = nnx.jit(lambda m, x: m(x))(MLP(2, (16,), 2, rngs=nnx.Rngs(0)), x)
        bf16 = nnx.jit(lambda m, x: m(x))(MLP(2, (16,), 2, dtype="bfloat16", rngs=nnx.Rngs(0)), x)
        chex.assert_type(bf16, jnp.float32)
        np.testing.assert_allclose(bf16, f32, atol=5e-2)
        assert not np.array_equal(bf16, f32)  # it really computed in bfloat16


@settings(max_examples=10, deadline=None)
@given(
    in_features=st.integers(1, 6),
    hidden=st.lists(st.integers(1, 7), max_size=3),
    outputs=st.integers(1, 4),
    batch=st.integers(1, 5),
)
def test_output_shape_and_param_count(in_features, hidden, outputs, batch):
    # Abstract evaluation only (shapes, no compilation), so many examples stay cheap.
    model = nnx.eval_shape(lambda: MLP(in_features, tuple(hidden), outputs, rngs=nnx.Rngs(0)))
    graphdef, state = nnx.split(model)
    x = jax.ShapeDtypeStruct((batch, in_features), jnp.float32)
    out = jax.eval_shape(lambda s, x: nnx.merge(graphdef, s)(x), state, x)
    assert out.shape == (batch, outputs) and out.dtype == jnp.float32
    widths = [in_features, *hidden, outputs]
    expected = sum(a * b + b for a, b in zip(widths[:-1], widths[1:], strict=True))
    assert sum(x.size for x in jax.tree_util.tree_leaves(state)) == expected


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"in_features": 0}, "in_features"),
        ({"hidden": (4, -1)}, r"hidden\[1\]"),
        ({"num_outputs": 2.0}, "num_outputs"),
        ({"dtype": "float64"}, "dtype"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    args = {"in_features": 2, "hidden": (4,), "num_outputs": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        MLP(
            args.pop("in_features"),
            args.pop("hidden"),
            args.pop("num_outputs"),
            rngs=nnx.Rngs(0),
            **args,
        )


def test_wrong_input_width_names_x():
    with pytest.raises(ValueError, match=r"x: got shape \(3, 5\)"):
        MLP(2, (4,), 2, rngs=nnx.Rngs(0))(jnp.ones((3, 5)))
