"""The ``jaxparadigm`` console script and ``python -m jaxparadigm`` (C5.1): Ctrl-C is one line
and exit 130 from the first line of this package that runs, not only from ``main``'s.

:func:`jaxparadigm.cli.main` turns Ctrl-C into one stderr line from its own first line, but the
command's modules (NumPy, the argument types) load before it runs: an interrupt in those first
~0.2 s was Python's own ``KeyboardInterrupt`` traceback. :func:`main` holds SIGINT before it loads
anything of the package (raised in the main thread whatever the process inherited, as ``main``
does: a command started in the background inherits it ignored), then loads
:mod:`jaxparadigm.cli` and hands over to it. An interrupt while that loads -- or an error it
caused, which Python can raise in its place from inside an import -- is the one line
``main`` prints, ``jaxparadigm run: interrupted`` (the first argument that is one of
:data:`SUBCOMMANDS`; ``jaxparadigm: interrupted`` when none is), and exit 130.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading

__all__ = ["SUBCOMMANDS", "main"]

#: The subcommands, named here without loading them (``jaxparadigm.cli``'s ``COMMANDS`` keys: a
#: test keeps the two equal), for the line about a Ctrl-C that came while they loaded.
SUBCOMMANDS = ("run", "claims", "search", "index", "serve", "bench")


def _interrupted() -> int:
    command = next((word for word in sys.argv[1:] if word in SUBCOMMANDS), None)
    where = f"jaxparadigm {command}" if command else "jaxparadigm"
    print(f"{where}: interrupted", file=sys.stderr, flush=True)
    return 130


def main() -> int:
    """Hold SIGINT, load :mod:`jaxparadigm.cli` and return its ``main()``; 130 with one stderr
    line when Ctrl-C comes while it loads."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        from jaxparadigm.app import interrupts  # the standard library only
    except KeyboardInterrupt:
        return _interrupted()
    try:
        cli = importlib.import_module("jaxparadigm.cli")
    except BaseException as exc:
        if not interrupts.raised_by_interrupt(exc):
            raise
        return _interrupted()
    return cli.main()
