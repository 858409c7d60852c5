"""The ``jaxparadigm`` console script and ``python -m jaxparadigm`` (C5.1): Ctrl-C is one line
and exit 130 from the first line of this package that runs, not only from ``main``'s.

:func:`jaxparadigm.cli.main` turns Ctrl-C into one stderr line from its own first line, but the
command's modules (NumPy, the argument types) load before it runs: an interrupt in those first
~0.2 s was Python's own ``KeyboardInterrupt`` traceback, or, raised inside NumPy's C extension,
an ``ImportError`` ("Importing the numpy C-extensions failed ... could not import module
datetime"). :func:`main` therefore *records* SIGINT while :mod:`jaxparadigm.cli` loads (whatever
handler the process inherited: a command started in the background inherits it ignored) instead
of raising it inside an import, puts Python's ``KeyboardInterrupt`` handler back, and, when one
came, prints the line ``main`` prints -- ``jaxparadigm run: interrupted`` (the first argument
that is a subcommand, :mod:`~jaxparadigm.app.command_words`; ``jaxparadigm: interrupted`` when
none is), ignores further SIGINTs and exits 130 without running the command; else it hands over
to ``main``.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
from types import FrameType

__all__ = ["main"]


def _interrupted() -> int:
    # loaded here, SIGINT ignored by now: at the top it would widen the window before main
    from jaxparadigm.app.command_words import command_named, line_start

    print(f"{line_start(command_named(sys.argv[1:]))}: interrupted", file=sys.stderr, flush=True)
    return 130


def main() -> int:
    """Load :mod:`jaxparadigm.cli` with SIGINT recorded, then return its ``main()``; 130 with one
    stderr line when Ctrl-C came while it loaded."""
    came: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        came.append(signum)

    held = threading.current_thread() is threading.main_thread()
    if held:
        signal.signal(signal.SIGINT, record)
    try:
        cli = importlib.import_module("jaxparadigm.cli")
    finally:
        if held:  # from here a SIGINT raises KeyboardInterrupt, as main expects
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if came:
        if held:  # a second Ctrl-C from here on is ignored, as after main's line
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return _interrupted()
    return cli.main()
