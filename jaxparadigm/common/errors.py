"""The project's own error types: what the user got wrong, versus what went wrong in training.

* :class:`InputError` -- the user's input is wrong (a config key, a file, a query, an argument).
  It subclasses ``ValueError`` so library callers can keep catching ``ValueError``. The message
  names the argument or key path, the value found and what was expected. The CLI prints it as one
  line on stderr and exits with status 2.
* :class:`ConfigError` -- an :class:`InputError` about a config key path (``optim.learning_rate``).
* :class:`TrainingAborted` -- a run stopped by a give-up rule (it can no longer train). The CLI
  prints it as one line and exits with status 3.
* :class:`GroupFailed` -- a process of a search group died: the search cannot be answered.

Any other exception is a bug: the CLI lets it propagate with its traceback. The types live in the
bottom layer so that every wing (and the checks of :mod:`jaxparadigm.common.numbers`) raises the
same ones; :mod:`jaxparadigm.errors` is their public home.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ConfigError", "GroupFailed", "InputError", "TrainingAborted"]


class InputError(ValueError):
    """Bad user input (argument, file, query, config): CLI exit status 2."""


class ConfigError(InputError):
    """A config key path holds a bad value, is unknown, or is missing: CLI exit status 2."""

    #: Set by ``jaxparadigm.config.schema.problems_error``: each problem, unknown keys first.
    problems: list[Any]


class TrainingAborted(RuntimeError):
    """A training run gave up (for example, the guard's give-up rule fired): CLI exit status 3."""


class GroupFailed(TrainingAborted):
    """A process of a ``jax.distributed`` search group died or stopped answering: the search
    cannot be fully answered. CLI exit status 3; ``serve`` answers 503."""
