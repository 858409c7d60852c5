"""The project's own error types: what the user got wrong, versus what went wrong in training.

* :class:`InputError` -- the user's input is wrong (a config key, a file, a query, an argument).
  It subclasses ``ValueError`` so library callers can keep catching ``ValueError``. The message
  names the argument or key path, the value found and what was expected. The CLI prints it as one
  line on stderr and exits with status 2.
* :class:`ConfigError` -- an :class:`InputError` about a config key path (``optim.learning_rate``).
* :class:`TrainingAborted` -- a run stopped by a give-up rule (it can no longer train). The CLI
  prints it as one line and exits with status 3.

Any other exception is a bug: the CLI lets it propagate with its traceback.

:func:`require_int` is the one check for "an int in ``[lo, hi]``" (``k``, ``top_k``, sizes):
every such argument is refused the same way, with an :class:`InputError` naming it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "GroupFailed",
    "InputError",
    "TrainingAborted",
    "require_int",
    "short_repr",
]


class InputError(ValueError):
    """Bad user input (argument, file, query, config): CLI exit status 2."""


class ConfigError(InputError):
    """A config key path holds a bad value, is unknown, or is missing: CLI exit status 2."""

    #: Set by ``jaxparadigm.config.schema.problems_error``: each problem, unknown keys first.
    problems: list[Any]


class TrainingAborted(RuntimeError):
    """A training run gave up (for example, the guard's give-up rule fired): CLI exit status 3."""


class GroupFailed(TrainingAborted):
    """A process of a ``jax.distributed`` search group died or stopped answering (issue 37): the
    search cannot be fully answered. CLI exit status 3; ``serve`` answers 503."""


def require_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` if it is an int (not a bool) with ``lo <= value <= hi`` (no upper bound when
    ``hi`` is None); otherwise :class:`InputError` ``"NAME: got VALUE, expected an int >= LO"``
    (or ``"... an int in [LO, HI]"``). Used for every k / top-k / size argument (C1.1)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < lo
        or (hi is not None and value > hi)
    ):
        want = f"an int >= {lo}" if hi is None else f"an int in [{lo}, {hi}]"
        raise InputError(f"{name}: got {short_repr(value)}, expected {want}")
    return value


def short_repr(value: object) -> str:
    """``repr(value)`` cut to 60 characters (``...``): error messages quote what was sent, never a
    megabyte of it."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."
