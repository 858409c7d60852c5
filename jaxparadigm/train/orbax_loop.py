"""Orbax reads that end cleanly when they fail: the event loop outlives every in-flight read (C5.1).

The cause of the ``RuntimeError: Event loop is closed`` tracebacks that followed a clean checkpoint
refusal (issues 24, 25): orbax runs a synchronous restore as
``loop.run_until_complete(coro); loop.close()`` (``orbax.checkpoint._src.asyncio_utils.
_run_sync_via_new_loop``). The coroutine gathers one task per leaf; when one leaf's read fails,
``asyncio.gather`` raises at once but does not stop its siblings, so the loop is closed while
tensorstore still completes their reads. Each completion then calls
``loop.call_soon_threadsafe`` from a tensorstore thread on the closed loop, and the resulting
``RuntimeError`` reaches ``sys.unraisablehook`` (a traceback per leaf, printed before or after the
refusal depending on thread timing: about half of the runs).

:func:`draining_event_loops` runs orbax's synchronous calls in a loop that, before closing, runs
every task still pending on it to completion (their results and errors are discarded: the first
error has already been raised). No read is left in flight, so nothing reaches a closed loop, and the
error raised is orbax's first one, unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

from orbax.checkpoint._src import asyncio_utils

__all__ = ["draining_event_loops", "run_until_drained"]

_LOCK = threading.Lock()


def run_until_drained(coro: Coroutine[Any, Any, Any]) -> Any:
    """``coro``'s result in a fresh event loop that is closed only once no task is pending on it.

    Semantics of ``asyncio.run`` without its cancellation: when ``coro`` raises, the tasks it
    started (orbax's per-leaf reads) are awaited to their end, then the error propagates.
    """
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            while pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                pending = asyncio.all_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


@contextlib.contextmanager
def draining_event_loops() -> Iterator[None]:
    """Within the block, orbax's synchronous calls run through :func:`run_until_drained`.

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
