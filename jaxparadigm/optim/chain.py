"""The project's standard optimiser, built from its settings (C4.1-C4.4).

``chain_for(settings)`` (``settings``: an :class:`~jaxparadigm.optim.chain_settings.OptimSettings`,
e.g. ``cfg.optim``) = clip -> the direction of ``settings.name`` (the builder registered in
:data:`~jaxparadigm.optim.optimisers.OPTIMISERS`) -> weight decay -> ``-lr(count)`` scaling,
where ``lr`` is ``schedule_for(settings)`` (peak ``settings.learning_rate``).

The settings type checked every field's bounds when it was built (``optim.b1`` in ``[0, 1)``,
``eps > 0`` ...); here only the relations between fields that a schedule needs are checked
(``decay_steps > warmup_steps`` for ``warmup_cosine_decay``, no extra warmup for ``linear_lr``),
one ``ValueError`` naming the key path. The optimisers themselves take anything optax takes.
"""

from __future__ import annotations

from typing import Any

import optax

from jaxparadigm.optim import clipping, schedules
from jaxparadigm.optim.chain_settings import OptimSettings
from jaxparadigm.optim.optimisers import OPTIMISERS

_CLIPS = {
    "global": clipping.clip_by_global_norm,
    "torch": clipping.clip_grad_norm_torch,
    "tf": clipping.clip_by_global_norm_tf,
    "per_leaf": clipping.clip_by_norm_per_leaf,
}


def _settings(settings: Any) -> OptimSettings:
    """``settings`` if it is an :class:`OptimSettings` (checked when built), else ``TypeError``."""
    if not isinstance(settings, OptimSettings):
        raise TypeError(
            f"config={type(settings).__name__}: expected an OptimSettings such as "
            "jaxparadigm.config.OptimConfig (cfg.optim)"
        )
    return settings


def _with_warmup(main: schedules.Schedule, peak: float, warmup_steps: int) -> schedules.Schedule:
    if warmup_steps == 0:
        return main
    warmup = schedules.linear(0.0, peak, warmup_steps)
    return schedules.join([warmup, main], [warmup_steps])


def schedule_for(config: OptimSettings) -> schedules.Schedule:
    """The learning-rate schedule ``count -> lr`` of ``chain_for(config)`` (C4.3), for logging.

    Peak value ``config.learning_rate``; ``config.schedule.name`` selects:
    ``constant`` (lr), ``linear`` (lr -> end_value over decay_steps), ``polynomial`` (same with
    ``power``), ``cosine_decay`` (lr -> alpha*lr over decay_steps), ``warmup_cosine_decay``
    (0 -> lr over warmup_steps, cosine to end_value at decay_steps), ``linear_lr`` (PyTorch
    LinearLR: start_factor*lr -> end_factor*lr over total_iters). For the first four a
    ``warmup_steps > 0`` prepends a linear warmup 0 -> lr and the decay starts after it.
    """
    config = _settings(config)
    sc = config.schedule
    lr = config.learning_rate
    if sc.name == "warmup_cosine_decay" and sc.decay_steps <= sc.warmup_steps:
        raise ValueError(
            f"optim.schedule.decay_steps={sc.decay_steps!r}: "
            f"expected > optim.schedule.warmup_steps ({sc.warmup_steps}) for warmup_cosine_decay"
        )
    if sc.name == "constant":
        return _with_warmup(schedules.constant(lr), lr, sc.warmup_steps)
    if sc.name == "linear":
        return _with_warmup(schedules.linear(lr, sc.end_value, sc.decay_steps), lr, sc.warmup_steps)
    if sc.name == "polynomial":
        main = schedules.polynomial(lr, sc.end_value, sc.power, sc.decay_steps)
        return _with_warmup(main, lr, sc.warmup_steps)
    if sc.name == "cosine_decay":
        main = schedules.cosine_decay(lr, sc.decay_steps, sc.alpha)
        return _with_warmup(main, lr, sc.warmup_steps)
    if sc.name == "warmup_cosine_decay":
        return schedules.warmup_cosine_decay(0.0, lr, sc.warmup_steps, sc.decay_steps, sc.end_value)
    if sc.name == "linear_lr":
        if sc.warmup_steps != 0:
            raise ValueError(
                f"optim.schedule.warmup_steps={sc.warmup_steps!r}: linear_lr has its own warmup "
                "(start_factor, total_iters); expected 0"
            )
        return schedules.linear_lr(lr, sc.start_factor, sc.end_factor, sc.total_iters)
    raise ValueError(f"optim.schedule.name={sc.name!r}: unknown schedule")


def chain_for(config: OptimSettings, live: bool = False) -> optax.GradientTransformation:
    """clip -> direction -> weight decay -> ``-schedule_for(config)(count)`` (C4.1-C4.4).

    ``config.name`` selects the direction's builder in
    :data:`~jaxparadigm.optim.optimisers.OPTIMISERS` (``adam``, ``adamw``, ``sgd``,
    ``adam_torch``, ``lion``). ``config.clip.style`` picks the clipping paradigm (``none``,
    ``global``, ``torch``, ``tf``, ``per_leaf``). All stages are elementwise after one norm
    reduction, so under ``jax.jit`` (with donated params/state) XLA fuses the chain into a single
    pass over the parameters.

    ``live=True`` builds the direction, decay and rate stages with ``inject_hyperparams``: the
    same updates bit for bit, with ``lr_scale``, ``b1``/``b2``, ``momentum`` and the decoupled
    ``weight_decay`` in the state for ``set_hyperparams`` (``adam``'s L2 term stays static;
    ``adam_torch`` and ``lion`` have no live form).
    """
    config = _settings(config)
    if not isinstance(live, bool):
        raise TypeError(f"live={live!r}: expected a bool")
    schedule = schedule_for(config)
    clip = [] if config.clip.style == "none" else [_CLIPS[config.clip.style](config.clip.max_norm)]
    return optax.chain(*clip, *OPTIMISERS[config.name](config, schedule, live))
