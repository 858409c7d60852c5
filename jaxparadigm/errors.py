"""The project's own error types and its two checks of what a user sent (C1.1, C5.1).

* :class:`InputError` -- the user's input is wrong (a config key, a file, a query, an argument).
  It subclasses ``ValueError`` so library callers can keep catching ``ValueError``. The message
  names the argument or key path, the value found and what was expected. The CLI prints it as one
  line on stderr and exits with status 2.
* :class:`ConfigError` -- an :class:`InputError` about a config key path (``optim.learning_rate``).
* :class:`TrainingAborted` -- a run stopped by a give-up rule (it can no longer train). The CLI
  prints it as one line and exits with status 3.
* :class:`GroupFailed` -- a process of a search group died: CLI exit status 3.

Any other exception is a bug: the CLI lets it propagate with its traceback.

:func:`require_int` is the one check for "an int in ``[lo, hi]``" (``k``, ``top_k``, sizes;
:func:`jaxparadigm.common.numbers.check_int` raising :class:`InputError`), and :func:`short_repr`
the one way a value is quoted in a message (:func:`jaxparadigm.common.quoting.quote`). The types
are defined in :mod:`jaxparadigm.common.errors`, the bottom layer every wing may import.
"""

from __future__ import annotations

from jaxparadigm.common.errors import ConfigError, GroupFailed, InputError, TrainingAborted
from jaxparadigm.common.numbers import check_int as require_int
from jaxparadigm.common.quoting import quote as short_repr

__all__ = [
    "ConfigError",
    "GroupFailed",
    "InputError",
    "TrainingAborted",
    "require_int",
    "short_repr",
]
