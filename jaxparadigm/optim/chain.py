"""The project's standard optimiser, built from its settings (C4.1-C4.4).

``chain_for(config)`` (``config``: any :class:`~jaxparadigm.optim.chain_settings.OptimSettings`,
e.g. ``cfg.optim``) = clip -> Adam/SGD direction -> weight decay -> ``-lr(count)`` scaling,
where ``lr`` is ``schedule_for(config)`` (peak ``config.learning_rate``). Weight decay sits before
the learning-rate scaling so it is scaled by the scheduled rate, as in optax's ``adamw`` and
PyTorch's ``AdamW``/``SGD``.

The settings are a training config, not optax arguments: ``chain_for``/``schedule_for`` check
them with the config loader's bounds (``b1``/``b2``/``momentum`` in ``[0, 1)``, ``eps > 0``,
non-negative rates, storage dtypes float32/bfloat16/float16), one ``ValueError`` naming the key
path, where the optimisers themselves take anything optax takes. A config is written by a person
for a training run, and a value outside these bounds there is a typo, not a port of optax code.
"""

from __future__ import annotations

from typing import Any

import optax

from jaxparadigm.optim import clipping, schedules
from jaxparadigm.optim.adam import adam, adamw, scale_by_adam
from jaxparadigm.optim.adam_torch import adam_torch_style
from jaxparadigm.optim.chain_settings import OptimSettings
from jaxparadigm.optim.hyperparams import check_int, check_number
from jaxparadigm.optim.inject import inject_hyperparams
from jaxparadigm.optim.learning_rate import scale_by_learning_rate
from jaxparadigm.optim.sgd import sgd, trace
from jaxparadigm.optim.weight_decay import add_decayed_weights

_CLIPS = {
    "global": clipping.clip_by_global_norm,
    "torch": clipping.clip_grad_norm_torch,
    "tf": clipping.clip_by_global_norm_tf,
    "per_leaf": clipping.clip_by_norm_per_leaf,
}


_CONFIG_DTYPES = ("float32", "bfloat16", "float16")  # the config loader's StorageDtype


def _check_config(config: Any) -> OptimSettings:
    """Type and range checks of every field, each error naming its key path (``optim.*``)."""
    if not isinstance(config, OptimSettings):
        raise TypeError(
            f"config={type(config).__name__}: expected an OptimSettings such as "
            "jaxparadigm.config.OptimConfig (cfg.optim)"
        )
    check_number("optim.learning_rate", config.learning_rate, low=0.0)
    check_number("optim.b1", config.b1, low=0.0, high=1.0, high_open=True)
    check_number("optim.b2", config.b2, low=0.0, high=1.0, high_open=True)
    check_number("optim.eps", config.eps, low=0.0, low_open=True)
    check_number("optim.momentum", config.momentum, low=0.0, high=1.0, high_open=True)
    check_number("optim.weight_decay", config.weight_decay, low=0.0)
    for key in ("mu_dtype", "nu_dtype"):
        value = getattr(config, key)
        if value is not None and value not in _CONFIG_DTYPES:
            raise ValueError(
                f"optim.{key}={value!r}: expected None or one of {', '.join(_CONFIG_DTYPES)}"
            )
    if config.clip.style != "none":
        check_number("optim.clip.max_norm", config.clip.max_norm, low=0.0, low_open=True)
    sc = config.schedule
    check_int("optim.schedule.warmup_steps", sc.warmup_steps, low=0)
    if sc.name in ("linear", "polynomial", "cosine_decay", "warmup_cosine_decay"):
        check_int("optim.schedule.decay_steps", sc.decay_steps, low=1)
    if sc.name == "warmup_cosine_decay" and sc.decay_steps <= sc.warmup_steps:
        raise ValueError(
            f"optim.schedule.decay_steps={sc.decay_steps!r}: expected > optim.schedule.warmup_steps "
            f"({sc.warmup_steps}) for warmup_cosine_decay"
        )
    check_number("optim.schedule.end_value", sc.end_value, low=0.0)
    check_number("optim.schedule.power", sc.power, low=0.0, low_open=True)
    check_number("optim.schedule.alpha", sc.alpha, low=0.0, high=1.0)
    if sc.name == "linear_lr":
        check_number(
            "optim.schedule.start_factor", sc.start_factor, low=0.0, high=1.0, low_open=True
        )
        check_number("optim.schedule.end_factor", sc.end_factor, low=0.0, high=1.0)
        check_int("optim.schedule.total_iters", sc.total_iters, low=1)
    if config.loss_scale.enabled:
        check_number("optim.loss_scale.init_scale", config.loss_scale.init_scale, low=1.0)
        check_int("optim.loss_scale.growth_interval", config.loss_scale.growth_interval, low=1)
    return config


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
    config = _check_config(config)
    sc = config.schedule
    lr = config.learning_rate
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

    ``config.name``: ``adam`` (L2 decay added to the gradient before Adam, like ``torch.optim.Adam``),
    ``adamw`` (decoupled decay, like ``optax.adamw``), ``sgd`` (L2 decay, then momentum, like
    ``torch.optim.SGD``), ``adam_torch`` (``adam_torch_style``). ``config.clip.style`` picks the
    clipping paradigm (``none``, ``global``, ``torch``, ``tf``, ``per_leaf``). All stages are
    elementwise after one norm reduction, so under ``jax.jit`` (with donated params/state) XLA
    fuses the chain into a single pass over the parameters.

    ``live=True`` builds the direction, decay and rate stages with ``inject_hyperparams``: the
    same updates bit for bit, with ``lr_scale``, ``b1``/``b2``, ``momentum`` and the decoupled
    ``weight_decay`` in the state for ``set_hyperparams`` (``adam``'s L2 term stays static;
    ``adam_torch`` has no live form).
    """
    config = _check_config(config)
    if not isinstance(live, bool):
        raise TypeError(f"live={live!r}: expected a bool")
    schedule = schedule_for(config)
    parts: list[optax.GradientTransformation] = []
    if config.clip.style != "none":
        if config.clip.style not in _CLIPS:
            raise ValueError(f"optim.clip.style={config.clip.style!r}: unknown clipping style")
        parts.append(_CLIPS[config.clip.style](config.clip.max_norm))
    wd = config.weight_decay
    adam_args = (config.b1, config.b2, config.eps, 0.0, config.mu_dtype)
    nu: dict[str, Any] = {"nu_dtype": config.nu_dtype}
    if config.name == "adam":
        if wd > 0.0:
            parts.append(add_decayed_weights(wd))
        if live:
            parts.append(inject_hyperparams(adam)(schedule, *adam_args, **nu))
        else:
            parts.append(scale_by_adam(*adam_args, **nu))
            parts.append(scale_by_learning_rate(schedule))
    elif config.name == "adamw":
        if live:
            parts.append(inject_hyperparams(adamw)(schedule, *adam_args, weight_decay=wd, **nu))
        else:
            parts.append(scale_by_adam(*adam_args, **nu))
            parts.append(add_decayed_weights(wd))
            parts.append(scale_by_learning_rate(schedule))
    elif config.name == "sgd":
        if live:
            parts.append(
                inject_hyperparams(sgd)(schedule, config.momentum, config.nesterov, weight_decay=wd)
            )
        else:
            if wd > 0.0:
                parts.append(add_decayed_weights(wd))
            if config.momentum > 0.0:
                parts.append(trace(config.momentum, config.nesterov))
            parts.append(scale_by_learning_rate(schedule))
    elif config.name == "adam_torch":
        if live:
            raise ValueError("optim.name='adam_torch': no live form; use live=False")
        parts.append(adam_torch_style(schedule, config.b1, config.b2, config.eps, wd))
    else:
        raise ValueError(f"optim.name={config.name!r}: unknown optimiser")
    return optax.chain(*parts)
