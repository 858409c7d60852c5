"""``train.sharding.mode=fsdp_tensor`` on the conftest's 4 devices (a 2 x 2 mesh) (C5.2): the
mesh, each parameter's layout by its logical names, the optimiser state keeping its parameters'
shardings (flax#5172), the batch over fsdp, the config's refusals naming train.sharding.tensor,
and a short run equal to one device's."""

import jax
import numpy as np
import pytest
import yaml
from flax import nnx
from jax.sharding import PartitionSpec as P

from jaxparadigm.build import build_model, dataset_for, train_from_config, train_settings
from jaxparadigm.config import config_from_dict
from jaxparadigm.config.relations import devices_problem
from jaxparadigm.errors import ConfigError
from jaxparadigm.models.partitioning import logical_names
from jaxparadigm.optim import chain_for
from jaxparadigm.train.sharding import mesh_for, shard_batch, step_layout
from jaxparadigm.train.train_loop import train
from jaxparadigm.train.train_step import init_train_state
from tests.train.conftest import tiny_raw

TINY_LM = {
    "model": {"kind": "transformer", "d_model": 32, "num_layers": 1, "num_heads": 4, "context": 8},
    "data": {"kind": "pydoc_chars", "seq_len": 8, "batch_size": 8},
    "optim": {"name": "adamw", "learning_rate": 0.003},
}


def _needs_four():
    if jax.device_count() < 4:
        pytest.skip(f"needs 4 devices, this process has {jax.device_count()}")


def _lm_config(out, name="lm", **train):
    raw = tiny_raw(out, name, **TINY_LM)
    raw["train"].update(train)
    return config_from_dict(raw)


def test_mesh_for_makes_the_fsdp_by_tensor_grid():
    _needs_four()
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    mesh = mesh_for("fsdp_tensor", 2)
    assert mesh.axis_names == ("fsdp", "tensor") and dict(mesh.shape) == {"fsdp": 2, "tensor": 2}
    assert [d.id for d in mesh.devices.flat] == [d.id for d in devices]  # tensor groups: pairs
    assert dict(mesh_for("fsdp_tensor", 4).shape) == {"fsdp": 1, "tensor": 4}
    assert mesh_for("fsdp").axis_names == ("data",)
    with pytest.raises(ValueError, match=r"^train.sharding.tensor: got 3, expected a divisor of"):
        mesh_for("fsdp_tensor", 3)


def _lm_state(tmp_path):
    """The abstract train state of the tiny LM (shapes only: the layout needs nothing else)."""
    cfg = _lm_config(tmp_path)
    dataset = dataset_for(cfg)
    variables = nnx.split(nnx.eval_shape(lambda: build_model(cfg.model, dataset, 0)))[1]
    params = nnx.to_pure_dict(variables)
    tx = chain_for(cfg.optim)
    state = jax.eval_shape(lambda p: init_train_state(p, tx, 0), params)
    return state, logical_names(variables)


def test_parameters_follow_their_names_and_the_optimiser_state_keeps_them(tmp_path):
    _needs_four()
    state, names = _lm_state(tmp_path)
    lay = step_layout(state, mesh_for("fsdp_tensor", 2), "fsdp_tensor", min_size=1, names=names)
    spec = lambda tree: jax.tree_util.tree_map(lambda s: s.spec, tree)
    params = spec(lay.state.params)
    block = params["blocks"][0]
    assert params["embed"]["embedding"] == P("tensor", "fsdp")  # (vocab, embed)
    assert params["pos"]["embedding"] == P(None, "fsdp")  # (length, embed)
    assert block["attn"]["qkv"]["kernel"] == P("fsdp", "tensor")
    assert block["attn"]["out"]["kernel"] == P("tensor", "fsdp")
    assert block["fc1"]["kernel"] == P("fsdp", "tensor") and block["fc1"]["bias"] == P("tensor")
    assert block["fc2"]["kernel"] == P("tensor", "fsdp") and block["ln1"]["scale"] == P("fsdp")
    gathered = spec(lay.gathered)["blocks"][0]  # the forward pass: fsdp gathered, tensor kept
    assert gathered["fc1"]["kernel"] == P(None, "tensor")
    assert gathered["fc2"]["kernel"] == P("tensor", None) and gathered["ln1"]["scale"] == P(None)
    # every params-shaped subtree of the optimiser state (adamw's mu, nu) has the params' specs
    opt = spec(lay.state.opt_state)
    p_def = jax.tree_util.tree_structure(state.params)
    mirrors = [
        sub
        for sub in jax.tree_util.tree_leaves(
            opt, is_leaf=lambda x: jax.tree_util.tree_structure(x) == p_def
        )
        if isinstance(sub, dict)
    ]
    assert len(mirrors) == 2 and all(m == params for m in mirrors)
    assert spec(lay.grads) == params
    assert lay.state.step.spec == P() and lay.state.rng.spec == P()
    assert lay.batch.spec == P("fsdp") and lay.rules is not None
    # min_size above every leaf: the names are not used, everything stays whole
    whole = step_layout(state, lay.mesh, "fsdp_tensor", min_size=10**9, names=names)
    assert all(s.spec == P() for s in jax.tree_util.tree_leaves(whole.state))
    # without names, a leaf is split over both axes by the 1-D rule
    unnamed = step_layout(state, lay.mesh, "fsdp_tensor", min_size=1)
    assert unnamed.state.params["embed"]["embedding"].spec == P(("fsdp", "tensor"))
    with pytest.raises(ValueError, match="expected \\('fsdp', 'tensor'\\) for mode"):
        step_layout(state, mesh_for("fsdp"), "fsdp_tensor", names=names)


def test_an_mlp_is_laid_out_megatron_style(tmp_path):
    _needs_four()
    cfg = config_from_dict(tiny_raw(tmp_path, "m", model={"hidden": [16, 16, 16]}))
    dataset = dataset_for(cfg)
    variables = nnx.split(nnx.eval_shape(lambda: build_model(cfg.model, dataset, 0)))[1]
    params = nnx.to_pure_dict(variables)
    state = jax.eval_shape(lambda p: init_train_state(p, chain_for(cfg.optim), 0), params)
    mesh = mesh_for("fsdp_tensor", 2)
    lay = step_layout(state, mesh, "fsdp_tensor", min_size=1, names=logical_names(variables))
    specs = jax.tree_util.tree_map(lambda s: s.spec, lay.state.params)
    assert [specs["layers"][i]["kernel"] for i in range(3)] == [
        P("fsdp", "tensor"),  # (embed, mlp): the 2 input features over fsdp's 2 parts
        P("tensor", "fsdp"),
        P("fsdp", "tensor"),
    ]
    assert specs["head"] == {"kernel": P("tensor", None), "bias": P(None)}


def test_the_batch_is_split_over_fsdp_and_shared_within_a_tensor_group():
    _needs_four()
    mesh = mesh_for("fsdp_tensor", 2)
    batch = shard_batch({"x": np.arange(8, dtype=np.int32).reshape(4, 2)}, mesh)["x"]
    assert batch.sharding.spec == P("fsdp")
    rows = {s.device.id: np.asarray(s.data).tolist() for s in batch.addressable_shards}
    first, second = (mesh.devices[0, 0].id, mesh.devices[0, 1].id), mesh.devices[1, 0].id
    assert rows[first[0]] == rows[first[1]] == [[0, 1], [2, 3]]  # one tensor group: same rows
    assert rows[second] == [[4, 5], [6, 7]]
    with pytest.raises(ValueError, match=r"divisible by this process's 2 part\(s\) of the mesh's"):
        shard_batch({"x": np.zeros((3, 2))}, mesh)


@pytest.mark.parametrize(
    "model, tensor, devices, expected",
    [
        ({"num_heads": 4}, 3, 8, "train.sharding.tensor: got 3, expected a divisor of the 8 dev"),
        ({"num_heads": 2}, 4, 8, "train.sharding.tensor: got 4, expected a divisor of model.num_h"),
        ({"num_heads": 4, "d_model": 36}, 4, 8, None),  # heads 4, mlp 144: both divisible
    ],
)
def test_tensor_must_divide_the_devices_and_what_it_splits(
    tmp_path, model, tensor, devices, expected
):
    raw = tiny_raw(tmp_path, "t", **TINY_LM)
    raw["model"].update(model)
    raw["train"]["sharding"] = {"mode": "fsdp_tensor", "tensor": tensor}
    problem = devices_problem(config_from_dict(raw), devices)
    assert (problem is None) if expected is None else problem.startswith(expected), problem
    assert problem is None or "\n" not in problem


def test_the_batch_must_split_over_the_fsdp_axis_and_tensor_needs_its_mode(tmp_path):
    raw = tiny_raw(tmp_path, "t", **TINY_LM)
    raw["data"]["batch_size"] = 6
    raw["train"]["sharding"] = {"mode": "fsdp_tensor", "tensor": 2}
    problem = devices_problem(config_from_dict(raw), 8)
    assert problem == (
        "data.batch_size: got 6, expected a multiple of 4, the fsdp axis of the mesh fsdp=4 x "
        "tensor=2 (train.sharding.mode='fsdp_tensor')"
    )
    raw["train"]["sharding"] = {"mode": "fsdp", "tensor": 2}
    with pytest.raises(ConfigError, match="'train.sharding.tensor': got 2, read only by train"):
        config_from_dict(raw)
    mlp = tiny_raw(tmp_path, "m", model={"hidden": [12, 10]})
    mlp["train"]["sharding"] = {"mode": "fsdp_tensor", "tensor": 4}
    assert devices_problem(config_from_dict(mlp), 4).startswith(
        "train.sharding.tensor: got 4, expected a divisor of model.hidden[1]=10"
    )


def test_a_short_2x2_run_equals_one_device_and_trains_the_model_in_place(tmp_path):
    _needs_four()
    one = train_from_config(_lm_config(tmp_path, "one", steps=4, log_every=1), progress=False)
    cfg = _lm_config(
        tmp_path, "two", steps=4, log_every=1, sharding={"mode": "fsdp_tensor", "tensor": 2}
    )
    dataset = dataset_for(cfg)
    model = build_model(cfg.model, dataset, cfg.train.seed)  # on one device: placed by train
    got = train(model, dataset, chain_for(cfg.optim), train_settings(cfg), progress=False)
    np.testing.assert_allclose(got.losses, one.losses, rtol=1e-5)
    assert got.placement["mesh"] == {"fsdp": 2, "tensor": 2}
    kernel = got.state.params["blocks"][0]["fc1"]["kernel"]
    assert kernel.sharding.spec == P("fsdp", "tensor")
    moments = [x for x in jax.tree_util.tree_leaves(got.state.opt_state) if x.shape == kernel.shape]
    assert len(moments) == 2 and all(m.sharding == kernel.sharding for m in moments)  # mu, nu
    assert model.blocks[0].fc1.kernel[...] is kernel  # the model holds the final parameters
    with pytest.raises(ConfigError, match="train.sharding.tensor: got 3, expected a divisor of"):
        train_from_config(
            _lm_config(tmp_path, "bad", sharding={"mode": "fsdp_tensor", "tensor": 3}),
            progress=False,
        )


def test_the_command_line_refuses_a_tensor_size_in_one_line(tmp_path, capsys):
    _needs_four()
    from jaxparadigm import cli

    path = tmp_path / "lm.yaml"
    path.write_text(yaml.safe_dump(tiny_raw(tmp_path, "cli", **TINY_LM)))
    overrides = ["train.sharding.mode=fsdp_tensor", "train.sharding.tensor=3"]
    assert cli.main(["run", str(path), *overrides]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines == [
        "jaxparadigm run: error: train.sharding.tensor: got 3, expected a divisor of the 4 "
        "devices (the fsdp axis takes devices / tensor)"
    ]
    assert cli.main(["run", str(path), "train.sharding.tensor=2"]) == 2  # with mode none
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'train.sharding.tensor': got 2, read only by" in lines[0]
