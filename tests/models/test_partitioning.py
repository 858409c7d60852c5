"""Logical axis names and the rules table (C5.2): every parameter's names, the spec they give on a
(fsdp, tensor) mesh, and the one-line refusals (two logical axes of one array on one mesh axis,
MaxText#4205; a logical axis mapped twice; a mesh axis the mesh lacks)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxparadigm.models.mlp import MLP
from jaxparadigm.models.partitioning import (
    RULES,
    axes,
    check_rules,
    constrain,
    logical_names,
    logical_spec,
    sharding_rules,
)
from jaxparadigm.models.transformer import TransformerLM

SIZES = {"fsdp": 4, "tensor": 2}


@pytest.mark.parametrize(
    "names, shape, expected",
    [
        (("embed", "mlp"), (64, 256), P("fsdp", "tensor")),
        (("mlp", "embed"), (256, 64), P("tensor", "fsdp")),
        (("vocab", "embed"), (256, 64), P("tensor", "fsdp")),
        (("length", "embed"), (16, 64), P(None, "fsdp")),  # length is never split
        (("embed", "heads"), (64, 192), P("fsdp", "tensor")),
        (("embed",), (6,), P(None)),  # 6 % 4: not divisible, stays whole
        (("embed", "mlp"), (2, 128), P(None, "tensor")),  # an MLP's 2 input features
        (("batch", "length", "heads", None), (8, 16, 4, 16), P("fsdp", None, "tensor", None)),
        (("batch", "length", None), (8, 16, 64), P("fsdp", None, None)),
        ((None, "unknown"), (8, 8), P(None, None)),  # no name / a name not in the table
    ],
)
def test_logical_spec_table(names, shape, expected):
    assert logical_spec(names, shape, RULES, SIZES) == expected


def test_two_logical_axes_of_one_array_on_one_mesh_axis_are_refused_in_one_line():
    rules = (("batch", "fsdp"), ("embed", "fsdp"), ("mlp", "tensor"))
    with pytest.raises(ValueError) as err:  # the residual stream named embed under these rules
        logical_spec(("batch", "length", "embed"), (8, 16, 64), rules, SIZES, "activation")
    msg = str(err.value)
    assert msg == (
        "rules: logical axes 'batch' and 'embed' of activation ('batch', 'length', 'embed') both "
        "map to mesh axis 'fsdp'; expected each mesh axis at most once per array"
    )
    # a table putting mlp on fsdp refuses the fc1 kernel (embed, mlp)
    bad = (("embed", "fsdp"), ("mlp", "fsdp"))
    with pytest.raises(ValueError, match=r"'embed' and 'mlp' of params\['fc1'\] .* 'fsdp'"):
        logical_spec(("embed", "mlp"), (64, 256), bad, SIZES, "params['fc1']")


def test_rules_tables_are_checked():
    assert check_rules(RULES, ("fsdp", "tensor"))["heads"] == "tensor"
    with pytest.raises(ValueError, match="logical axis 'mlp' is mapped twice"):
        check_rules((("mlp", "tensor"), ("mlp", "fsdp")), ("fsdp", "tensor"))
    with pytest.raises(ValueError, match=r"'mlp' -> 'model', expected a mesh axis of"):
        check_rules((("mlp", "model"),), ("fsdp", "tensor"))
    with pytest.raises(ValueError, match=r"2 logical names \('embed', 'mlp'\) for an array of"):
        logical_spec(("embed", "mlp"), (4,), RULES, SIZES)


def test_every_transformer_parameter_is_named():
    model = nnx.eval_shape(lambda: TransformerLM(256, 32, 1, 4, 16, rngs=nnx.Rngs(0)))
    names = logical_names(nnx.split(model)[1])
    block = names["blocks"][0]
    assert names["embed"] == {"embedding": ("vocab", "embed")}
    assert names["pos"] == {"embedding": ("length", "embed")}
    assert names["ln_f"] == {"scale": ("embed",), "bias": ("embed",)}
    assert block["attn"]["qkv"] == {"kernel": ("embed", "heads"), "bias": ("heads",)}
    assert block["attn"]["out"] == {"kernel": ("heads", "embed"), "bias": ("embed",)}
    assert block["fc1"] == {"kernel": ("embed", "mlp"), "bias": ("mlp",)}
    assert block["fc2"] == {"kernel": ("mlp", "embed"), "bias": ("embed",)}
    assert block["ln1"] == block["ln2"] == {"scale": ("embed",), "bias": ("embed",)}
    untied = nnx.eval_shape(
        lambda: TransformerLM(256, 32, 1, 4, 16, tie_embeddings=False, rngs=nnx.Rngs(0))
    )
    head = logical_names(nnx.split(untied)[1])["lm_head"]
    assert head == {"kernel": ("embed", "vocab"), "bias": ("vocab",)}


def test_mlp_layers_alternate_like_megatron():
    names = logical_names(nnx.split(MLP(2, [8, 8, 8], 2, rngs=nnx.Rngs(0)))[1])
    kernels = [names["layers"][i]["kernel"] for i in range(3)]
    assert kernels == [("embed", "mlp"), ("mlp", "embed"), ("embed", "mlp")]
    assert [names["layers"][i]["bias"] for i in range(3)] == [("mlp",), ("embed",), ("mlp",)]
    assert names["head"] == {"kernel": ("mlp", None), "bias": (None,)}
    even = logical_names(nnx.split(MLP(2, [8, 8], 2, rngs=nnx.Rngs(0)))[1])
    assert even["head"]["kernel"] == ("embed", None)
    unnamed = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    assert logical_names(nnx.split(unnamed)[1]) == {"kernel": None, "bias": None}


def test_names_do_not_change_the_values():
    named = nnx.Linear(4, 8, rngs=nnx.Rngs(3), kernel_metadata=axes("embed", "mlp"))
    plain = nnx.Linear(4, 8, rngs=nnx.Rngs(3))
    np.testing.assert_array_equal(named.kernel[...], plain.kernel[...])


def test_constrain_is_the_identity_outside_rules_and_lays_out_inside():
    x = jnp.ones((8, 6))
    assert constrain(x, ("batch", None)) is x
    n = jax.device_count()
    if n < 4:
        pytest.skip(f"needs 4 devices, this process has {n}")
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("fsdp", "tensor"))

    def f(a):
        with sharding_rules(mesh, RULES):
            return constrain(a * 2, ("batch", "mlp"))

    out = jax.jit(f)(jax.device_put(x, NamedSharding(mesh, P())))
    assert out.sharding.spec == P("fsdp", "tensor")
    np.testing.assert_array_equal(out, 2 * np.ones((8, 6)))
    with pytest.raises(ValueError, match="expected a mesh axis of"):
        with sharding_rules(mesh, (("batch", "data"),)):
            pass
