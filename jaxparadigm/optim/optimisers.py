"""The optimiser registry: ``optim.name`` -> the builder of its stages (C4.1-C4.4).

Each builder takes the (already checked) optimiser settings, the learning-rate schedule and
``live`` and returns the chain's stages after clipping: direction -> weight decay ->
``-lr(count)``. Weight decay sits before the learning-rate scaling so it is scaled by the
scheduled rate, as in optax's ``adamw`` and PyTorch's ``AdamW``/``SGD``. The allowed values of
``optim.name`` (``OptimSettings.name``, and so the config key) are this table's keys: a new
optimiser is one module plus one entry here.

* ``adam``: L2 decay added to the gradient before Adam (``torch.optim.Adam``);
* ``adamw``: decoupled decay (``optax.adamw``);
* ``sgd``: L2 decay, then momentum (``torch.optim.SGD``);
* ``adam_torch``: :func:`~jaxparadigm.optim.adam_torch.adam_torch_style` (no live form);
* ``lion``: :func:`~jaxparadigm.optim.lion.lion` (``optax.lion``; ``b1``, ``b2``, decoupled
  ``weight_decay``, ``mu_dtype``; no live form).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optax

from jaxparadigm.optim.adam import adam, adamw, scale_by_adam
from jaxparadigm.optim.adam_torch import adam_torch_style
from jaxparadigm.optim.inject import inject_hyperparams
from jaxparadigm.optim.learning_rate import scale_by_learning_rate
from jaxparadigm.optim.lion import scale_by_lion
from jaxparadigm.optim.schedules import Schedule
from jaxparadigm.optim.sgd import sgd, trace
from jaxparadigm.optim.weight_decay import add_decayed_weights

__all__ = ["OPTIMISERS", "Stages"]

#: The stages a builder returns (the chain after clipping), in order.
Stages = list[optax.GradientTransformation]


def _adam(s: Any, schedule: Schedule, live: bool) -> Stages:
    args, nu = (s.b1, s.b2, s.eps, 0.0, s.mu_dtype), {"nu_dtype": s.nu_dtype}
    decay = [add_decayed_weights(s.weight_decay)] if s.weight_decay > 0.0 else []
    if live:
        return [*decay, inject_hyperparams(adam)(schedule, *args, **nu)]
    return [*decay, scale_by_adam(*args, **nu), scale_by_learning_rate(schedule)]


def _adamw(s: Any, schedule: Schedule, live: bool) -> Stages:
    args, nu = (s.b1, s.b2, s.eps, 0.0, s.mu_dtype), {"nu_dtype": s.nu_dtype}
    if live:
        return [inject_hyperparams(adamw)(schedule, *args, weight_decay=s.weight_decay, **nu)]
    return [
        scale_by_adam(*args, **nu),
        add_decayed_weights(s.weight_decay),
        scale_by_learning_rate(schedule),
    ]


def _sgd(s: Any, schedule: Schedule, live: bool) -> Stages:
    wd = s.weight_decay
    if live:
        return [inject_hyperparams(sgd)(schedule, s.momentum, s.nesterov, weight_decay=wd)]
    decay = [add_decayed_weights(wd)] if wd > 0.0 else []
    momentum = [trace(s.momentum, s.nesterov)] if s.momentum > 0.0 else []
    return [*decay, *momentum, scale_by_learning_rate(schedule)]


def _no_live_form(name: str, live: bool) -> None:
    if live:
        raise ValueError(f"optim.name={name!r}: no live form; use live=False")


def _adam_torch(s: Any, schedule: Schedule, live: bool) -> Stages:
    _no_live_form("adam_torch", live)
    return [adam_torch_style(schedule, s.b1, s.b2, s.eps, s.weight_decay)]


def _lion(s: Any, schedule: Schedule, live: bool) -> Stages:
    _no_live_form("lion", live)
    return [
        scale_by_lion(s.b1, s.b2, s.mu_dtype),
        add_decayed_weights(s.weight_decay),
        scale_by_learning_rate(schedule),
    ]


#: ``optim.name`` -> ``builder(settings, schedule, live)``: the stages after clipping.
OPTIMISERS: dict[str, Callable[[Any, Schedule, bool], Stages]] = {
    "adam": _adam,
    "adamw": _adamw,
    "sgd": _sgd,
    "adam_torch": _adam_torch,
    "lion": _lion,
}
