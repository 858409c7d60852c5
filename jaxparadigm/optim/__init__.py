"""Optimisers as optax ``GradientTransformation`` (init, update) pairs (C4.1-C4.4).

Every stateful transformation counts with ``safe_increment``; schedules live in
``jaxparadigm.optim.schedules``, the optimisers ``optim.name`` selects in the registry
``jaxparadigm.optim.optimisers`` (:data:`OPTIMISERS`), clipping paradigms in
``jaxparadigm.optim.clipping``, live (state-held) hyper-parameters in ``jaxparadigm.optim.inject``.
"""

from jaxparadigm.optim import schedules
from jaxparadigm.optim.adam import ScaleByAdamState, adam, adam_state_report, adamw, scale_by_adam
from jaxparadigm.optim.adam_torch import AdamTorchState, adam_torch_style
from jaxparadigm.optim.chain import chain_for, schedule_for
from jaxparadigm.optim.chain_settings import (
    ClipSettings,
    LossScaleSettings,
    OptimSettings,
    ScheduleSettings,
)
from jaxparadigm.optim.clipping import (
    clip_by_global_norm,
    clip_by_global_norm_tf,
    clip_by_norm_per_leaf,
    clip_grad_norm_torch,
    global_norm,
)
from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.inject import InjectHyperparamsState, inject_hyperparams, set_hyperparams
from jaxparadigm.optim.learning_rate import scale_by_learning_rate, scale_by_schedule
from jaxparadigm.optim.lion import ScaleByLionState, lion, scale_by_lion
from jaxparadigm.optim.loss_scale import DynamicLossScale, LossScaleState, dynamic_loss_scale
from jaxparadigm.optim.optimisers import OPTIMISERS
from jaxparadigm.optim.sgd import sgd, trace
from jaxparadigm.optim.update_step import update_step
from jaxparadigm.optim.weight_decay import add_decayed_weights

__all__ = [
    "OPTIMISERS",
    "AdamTorchState",
    "ClipSettings",
    "LossScaleSettings",
    "DynamicLossScale",
    "InjectHyperparamsState",
    "LossScaleState",
    "OptimSettings",
    "ScaleByAdamState",
    "ScaleByLionState",
    "ScheduleSettings",
    "adam",
    "adam_state_report",
    "adam_torch_style",
    "adamw",
    "add_decayed_weights",
    "chain_for",
    "clip_by_global_norm",
    "clip_by_global_norm_tf",
    "clip_by_norm_per_leaf",
    "clip_grad_norm_torch",
    "dynamic_loss_scale",
    "global_norm",
    "inject_hyperparams",
    "lion",
    "safe_increment",
    "scale_by_adam",
    "scale_by_learning_rate",
    "scale_by_lion",
    "scale_by_schedule",
    "schedule_for",
    "schedules",
    "set_hyperparams",
    "sgd",
    "trace",
    "update_step",
]
