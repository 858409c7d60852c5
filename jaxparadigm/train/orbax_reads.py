"""Orbax reads that end cleanly when they fail: the event loop outlives every in-flight read (C5.1).

The cause of the ``RuntimeError: Event loop is closed`` tracebacks that followed a clean checkpoint
refusal: orbax runs a synchronous restore as
``loop.run_until_complete(coro); loop.close()`` (``orbax.checkpoint._src.asyncio_utils.
_run_sync_via_new_loop``). The coroutine gathers one task per leaf; when one leaf's read fails,
``asyncio.gather`` raises at once but does not stop its siblings, so the loop is closed while
tensorstore still completes their reads. Each completion then calls
``loop.call_soon_threadsafe`` from a tensorstore thread on the closed loop, and the resulting
``RuntimeError`` reaches ``sys.unraisablehook`` (a traceback per leaf, printed before or after the
refusal depending on thread timing: about half of the runs).

:func:`draining_event_loops` runs orbax's synchronous calls in a loop that, when the call failed,
first runs every task still pending on it to completion (at most ``DRAIN_TIMEOUT_S``, then cancels
the rest; their results and errors are discarded: the first error has already been raised). No
read is left in flight, so nothing reaches a closed loop, and the error raised is orbax's first one,
unchanged. A call that succeeds runs exactly as in orbax.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

from orbax.checkpoint._src import asyncio_utils

__all__ = ["DRAIN_TIMEOUT_S", "draining_event_loops", "run_until_drained"]

_LOCK = threading.RLock()


#: How long a failed call waits for its in-flight tasks before cancelling them (asyncio.run's way).
DRAIN_TIMEOUT_S = 60.0


def _drain(loop: asyncio.AbstractEventLoop) -> None:
    """Run the tasks still pending on ``loop`` to their end (at most ``DRAIN_TIMEOUT_S``; then
    cancel the rest and let them finish cancelling). Their results and errors are discarded."""
    pending = asyncio.all_tasks(loop)
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=DRAIN_TIMEOUT_S))
    left = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    for task in pending:  # retrieve the errors: no "exception was never retrieved" noise
        if task.done() and not task.cancelled():
            task.exception()


def run_until_drained(coro: Coroutine[Any, Any, Any]) -> Any:
    """``coro``'s result in a fresh event loop, as orbax's own runner; when ``coro`` raises, the
    tasks it started (orbax's per-leaf reads or writes) are first run to their end, so none is in
    flight when the loop closes, then the error propagates unchanged (C5.1)."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        try:
            return loop.run_until_complete(coro)
        except BaseException:
            _drain(loop)
            raise
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@contextlib.contextmanager
def draining_event_loops() -> Iterator[None]:
    """Within the block, orbax's synchronous calls run through :func:`run_until_drained` (C5.1).

    Replaces orbax's ``_run_sync_via_new_loop`` (the function ``asyncio_utils.run_sync`` calls when
    no loop is running) and restores it on exit; calls from several threads are serialised.
    """
    with _LOCK:
        original = getattr(asyncio_utils, "_run_sync_via_new_loop", None)
        if original is None:  # another orbax version: nothing of ours to replace
            yield
            return
        asyncio_utils._run_sync_via_new_loop = run_until_drained
        try:
            yield
        finally:
            asyncio_utils._run_sync_via_new_loop = original
