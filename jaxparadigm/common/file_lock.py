"""One advisory lock on a file, for every writer that owns a folder (C1.1, C5.1).

    file_lock(path, command, what=..., busy=...)   hold ``path`` while ``command`` writes

The lock file is opened with ``O_NOFOLLOW`` (a symlink, even to a regular file, is refused and
its target never written), checked with ``fstat`` to be a regular file (a FIFO, a folder, a
socket or a device is refused naming what it is), then locked with an exclusive, non-blocking
``flock``. The holder writes ``pid N (COMMAND, since YYYY-mm-dd HH:MM:SS)`` into it (written,
then cut: the file is never seen empty). A second taker gets one
:class:`~jaxparadigm.common.errors.InputError` at once, ``busy(holder)``, naming the holder's pid
as the file says it. The lock belongs to the open file, so it ends with its process: the lock
file of a holder that died is simply taken over. Every refusal names the path and ``what`` the
file is for (``the index's lock file``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

from jaxparadigm.common.bounded_reading import mode_words
from jaxparadigm.common.errors import InputError

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock, one writer is on the user
    fcntl = None

__all__ = ["file_lock", "lock_holder"]


def _open_lock(path: Path, what: str) -> int:
    """The lock file's descriptor: created if absent, never through a link, a regular file."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise InputError(
                f"{path}: {what} is a symlink; a writer never follows a link: remove it (the "
                "lock file is created again) and run this again"
            ) from None
        if path.exists() and not path.is_file():
            raise InputError(
                f"{path}: {what} is {mode_words(path.lstat().st_mode)}, expected a regular file: "
                "remove it and run this again"
            ) from None
        raise InputError(f"{path}: cannot open {what} ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(
            f"{path}: {what} is {mode_words(mode)}, expected a regular file: remove it and run "
            "this again"
        )
    return fd


def lock_holder(fd: int, wait_s: float = 1.0) -> str:
    """What the lock file open as ``fd`` says about its holder (``pid N (command, since T)``),
    bytes that are not UTF-8 replaced; a holder that has just taken the lock may not have written
    it yet, so an empty file is re-read for ``wait_s`` seconds, then named "another process"."""
    deadline = time.monotonic() + wait_s
    while True:
        text = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
        if text or time.monotonic() > deadline:
            return text or "another process"
        time.sleep(0.01)


@contextlib.contextmanager
def file_lock(path: Path, command: str, *, what: str, busy: Callable[[str], str]) -> Iterator[None]:
    """Hold the advisory lock ``path`` while ``command`` writes (module docstring).

    ``what`` names the file in refusals (``the run's lock file``); ``busy(holder)`` is the
    message of the :class:`InputError` a second taker gets, ``holder`` the lock file's text
    (:func:`lock_holder`). The file is left in place on exit (its text names the last holder).
    """
    fd = _open_lock(path, what)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InputError(busy(lock_holder(fd))) from None
        text = f"pid {os.getpid()} ({command}, since {time.strftime('%Y-%m-%d %H:%M:%S')})\n"
        os.pwrite(fd, text.encode(), 0)  # write, then cut: the file is never seen empty
        os.ftruncate(fd, len(text.encode()))
        yield
    finally:
        os.close(fd)
