"""A run's first train state, made in its layout: no whole copy on any one device (C4.1, C5.2).

With ``train.sharding.mode`` ``none`` the state is ``init_train_state(params, ...)`` on the
default device, as a single-device run needs. With a sharded mode the layout
(:func:`jaxparadigm.train.sharding.step_layout`) is computed from the state's *shapes*
(``jax.eval_shape``), then

1. the parameters are put into the layout's parameter shardings: as they are when they already
   lie there (a model built by :func:`model_in_layout`), else through the host, each device
   getting only its slice (``sharding.place``);
2. the rest of the state (optimiser state, counters, RNG, scales, guard) is made by one jitted
   ``init_train_state`` whose outputs have the layout's shardings and which donates the placed
   parameters (its output parameters reuse their buffers): every leaf is born split as the
   layout says; nothing the size of the whole state exists on one device.

:func:`model_in_layout` builds a model the same way: its constructor runs under ``jax.jit`` with
the parameters' layout as the output shardings, so a parameter never exists whole on one device
(for ``fsdp``/``fsdp_tensor``). The values are those of the eager constructor, bit for bit (the
same PRNG bits; XLA computes each shard of them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax
from flax import nnx

from jaxparadigm.models.partitioning import logical_names
from jaxparadigm.optim import DynamicLossScale
from jaxparadigm.train.settings import ShardingSettings, TrainSettings
from jaxparadigm.train.sharding import StepLayout, mesh_for, place, step_layout, to_host
from jaxparadigm.train.train_step import TrainState, init_train_state

__all__ = ["initial_state", "model_in_layout", "param_shardings"]


def _layout(abstract: TrainState, names: Any, sharding: ShardingSettings) -> StepLayout:
    mesh = mesh_for(sharding.mode, sharding.tensor)
    return step_layout(abstract, mesh, sharding.mode, sharding.min_size, names)


def param_shardings(params: Any, names: Any, sharding: ShardingSettings) -> Any:
    """The parameters' shardings in the layout of ``sharding`` (a sharded mode) for ``params``
    (arrays or ``ShapeDtypeStruct`` s) with logical ``names`` (or None) (C5.2)."""
    abstract = jax.eval_shape(lambda p: init_train_state(p, optax.identity(), 0), params)
    return _layout(abstract, names, sharding).state.params


def _in_place(x: Any, sharding: jax.sharding.Sharding) -> Any:
    """``x`` itself when it already lies in ``sharding``, else its host value placed there."""
    if isinstance(x, jax.Array) and x.sharding.is_equivalent_to(sharding, x.ndim):
        return x
    return place(to_host(x), sharding)


def initial_state(
    variables: nnx.State,
    tx: Any,
    settings: TrainSettings,
    loss_scale: DynamicLossScale | None = None,
) -> tuple[TrainState, StepLayout | None]:
    """``(state, layout)``: the fresh train state of a model's ``variables``
    (``nnx.split(model)[1]``) laid out by ``settings.sharding`` (module docstring; layout None
    for mode ``none``) (C4.1, C5.2)."""
    params = nnx.to_pure_dict(variables)
    seed, sharding = settings.seed, settings.sharding
    if sharding.mode == "none":
        return jax.device_put(init_train_state(params, tx, seed, loss_scale)), None
    make = lambda p: init_train_state(p, tx, seed, loss_scale)
    layout = _layout(jax.eval_shape(make, params), logical_names(variables), sharding)
    placed = jax.tree_util.tree_map(_in_place, params, layout.state.params)
    del params  # the caller's model still holds them until it is pointed at the state
    state = jax.jit(make, out_shardings=layout.state, donate_argnums=0)(placed)
    return state, layout


def model_in_layout(make: Callable[[], nnx.Module], sharding: ShardingSettings) -> nnx.Module:
    """``make()`` (an NNX model constructor), with its parameters born in the layout of
    ``sharding`` (module docstring); ``make()`` itself for mode ``none`` (C4.1, C5.2)."""
    if sharding.mode == "none":
        return make()
    graphdef, variables = nnx.split(nnx.eval_shape(make))
    shardings = param_shardings(nnx.to_pure_dict(variables), logical_names(variables), sharding)
    built = jax.jit(lambda: nnx.to_pure_dict(nnx.split(make())[1]), out_shardings=shardings)()
    nnx.replace_by_pure_dict(variables, built)
    return nnx.merge(graphdef, variables)
