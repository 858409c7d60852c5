"""Ctrl-C (SIGINT) in every ``jaxparadigm`` command, from the first line of ``main`` (C5.1).

    with interrupts_raised():              # the whole command, parser and imports included
        try:
            ...                            # SIGINT -> KeyboardInterrupt in the main thread
        except KeyboardInterrupt:
            interrupt_reported()           # further SIGINTs ignored to the end of the block
            print("jaxparadigm run: interrupted", file=sys.stderr)

:func:`interrupts_raised` holds for the length of a command:

* SIGINT raises ``KeyboardInterrupt`` in the main thread whatever handler the process inherited:
  a command started in the background of a shell inherits SIGINT *ignored*, and Python alone
  would then never raise it. A command that stops in its own way (``serve``'s graceful stop, a
  process group's launcher) installs its own handler inside the block and restores this one.
* An interrupt raised where Python can only print it and go on -- a garbage-collector callback
  (JAX's ``_xla_gc_callback``), a ``__del__``, a weakref callback: ``Exception ignored in ...``,
  the command running on -- is not printed (``sys.unraisablehook``) but raised again
  :data:`REDELIVER_S` later in the main thread's own code (a watcher thread, started on the first
  one, calls ``_thread.interrupt_main``), so it reaches ``main``'s one line. A SIGINT that lands
  inside that hook is merged with the one being delivered again.
* :func:`raised_by_interrupt` tells ``main`` an exception was raised because of an interrupt:
  Python turns one inside ``__set_name__`` (a class body of a module being imported) into a
  ``RuntimeError``.

On exit the handler and ``sys.unraisablehook`` that were there before are put back. Outside the
main thread (where handlers cannot be installed) the block runs unchanged.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

__all__ = ["REDELIVER_S", "interrupt_reported", "interrupts_raised", "raised_by_interrupt"]


#: How long after a swallowed interrupt it is raised again (out of the callback that swallowed it).
REDELIVER_S = 0.01


def raised_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised because of, a ``KeyboardInterrupt`` (its ``__cause__``
    / ``__context__`` chain): Python turns an interrupt inside ``__set_name__`` into
    ``RuntimeError("Error calling __set_name__ ...")``, so an import cut short by Ctrl-C can end
    in one."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


@contextlib.contextmanager
def interrupts_raised() -> Iterator[None]:
    """Hold SIGINT as ``KeyboardInterrupt`` for the block, none swallowed (module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    swallowed, done = threading.Event(), threading.Event()

    def redeliver() -> None:  # a thread: interrupt_main trips the handler for the main thread
        while swallowed.wait() and not done.is_set():
            swallowed.clear()
            time.sleep(REDELIVER_S)
            if not done.is_set():
                _thread.interrupt_main(signal.SIGINT)

    watcher = threading.Thread(target=redeliver, name="jaxparadigm-interrupts", daemon=True)
    previous_hook = sys.unraisablehook

    def unraisable(args) -> None:
        if isinstance(args.exc_type, type) and issubclass(args.exc_type, KeyboardInterrupt):
            swallowed.set()  # not printed: raised again in the main thread's own code
            if watcher.ident is None:
                watcher.start()
            return
        previous_hook(args)

    def raise_interrupt(signum: int, frame: FrameType | None) -> None:
        """Python's own handler (``KeyboardInterrupt``), save inside the hook above: the
        interrupt it is handling is delivered again, this one with it."""
        while frame is not None and frame.f_code is not unraisable.__code__:
            frame = frame.f_back
        if frame is None:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, raise_interrupt)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        done.set()
        swallowed.set()  # the watcher (if started) ends
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def interrupt_reported() -> None:
    """``main`` is about to write its one line about an interrupt: SIGINT is ignored from here to
    the end of :func:`interrupts_raised`'s block (which puts back the handler from before), so a
    second Ctrl-C cannot cut the line or the way out short with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
