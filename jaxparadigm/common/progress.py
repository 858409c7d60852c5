"""Progress a person can read, on a terminal and in a log file: one mechanism for every wing (C5.1).

:class:`Progress` counts units (training steps, passages encoded, sentences, claims) from
``initial`` to ``total``:

* On a terminal (the stream's ``isatty()``, or :data:`PROGRESS_TTY_ENV` set to ``1``): a tqdm
  bar. A terminal that reports a width of 0 (a fresh pty, some CI consoles), or a relayed pipe,
  gets a bar of :data:`DEFAULT_WIDTH` columns (tqdm would draw nothing at width 0).
* Anywhere else (``2> run.log``, CI, a pipe): a plain line every ``ceil((total - initial) /
  lines)`` units and at the end (``index build: 512/2281 passages, 85.3 passages/s, ETA 0:21``);
  never a carriage return.
* ``compiles=True`` (the first unit includes jit compilation): on a terminal a note
  ``DESC: compiling, then running the first step ...`` and the bar only once it has run, so the
  bar's rate and ETA measure the work, not the compiling; off a terminal the first unit's line
  says ``(compiled and ran in T s)`` (the time since ``t0``) and the rate counts the units after
  it.
* Off when ``enabled`` is false, or when ``TQDM_DISABLE`` is set to anything but
  ``""``/``0``/``false``/``no`` (tqdm's own convention; ``--no-progress`` sets it or passes
  ``enabled=False``).

:meth:`Progress.note` writes a line of its own (``claims: C1.1 (1/23) started``) above the bar or
among the plain lines.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = [
    "DEFAULT_WIDTH",
    "PROGRESS_TTY_ENV",
    "Progress",
    "clock",
    "progress_disabled_by_env",
    "terminal_width",
]

#: Set to ``1`` by the multi-process launcher for process 0 when the launcher's own stderr is a
#: terminal: the worker's stderr is a pipe, but what it writes ends on that terminal.
PROGRESS_TTY_ENV = "JAXPARADIGM_PROGRESS_TTY"
#: The bar's width where the terminal reports none (0 columns) or the stream is a relayed pipe.
DEFAULT_WIDTH = 80


def progress_disabled_by_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``TQDM_DISABLE`` asks for no progress output (any value but ''/0/false/no)."""
    value = (os.environ if environ is None else environ).get("TQDM_DISABLE", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def terminal_width(stream: Any) -> int:
    """The columns of the terminal behind ``stream``; :data:`DEFAULT_WIDTH` when it reports 0 or
    is no terminal (a pipe relayed to one)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return DEFAULT_WIDTH
    return columns if columns > 0 else DEFAULT_WIDTH


def clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on."""
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Units ``initial .. total`` done (the module docstring: a bar or plain lines).

    ``count`` is how a line names the count (``"{done}/{total} {unit}s"``; training's
    ``"step {done}/{total}"``); ``t0`` a ``time.perf_counter()`` value the first compiled unit
    is timed from (default: now).
    """

    def __init__(
        self,
        total: int,
        desc: str,
        *,
        stream: TextIO | None = None,
        initial: int = 0,
        unit: str = "step",
        count: str = "{done}/{total} {unit}s",
        enabled: bool = True,
        lines: int = 10,
        t0: float | None = None,
        compiles: bool = False,
    ) -> None:
        self.total, self.done, self.desc, self.unit, self.count = total, initial, desc, unit, count
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and total > initial and not progress_disabled_by_env()
        isatty = getattr(self.stream, "isatty", None)
        tty = (isatty is not None and isatty()) or os.environ.get(PROGRESS_TTY_ENV) == "1"
        self.tty = bool(self.enabled and tty)
        self.every = max(1, math.ceil((total - initial) / max(1, lines)))
        self._next = initial + self.every
        self._t0 = time.perf_counter() if t0 is None else t0
        self._compiling = compiles
        self._rate_from = (initial, self._t0)  # the rates count units done after this point
        self._bar: tqdm | None = None
        if self.tty and compiles:
            self._print(f"{desc}: compiling, then running the first {unit} ...")
        elif self.tty:
            self._bar = self._new_bar()

    def _new_bar(self) -> tqdm:
        from tqdm import tqdm as bar

        return bar(
            total=self.total,
            initial=self.done,
            desc=self.desc,
            unit=self.unit,
            leave=False,
            file=self.stream,
            ncols=terminal_width(self.stream),
        )

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def update(
        self, n: int = 1, postfix: Mapping[str, Any] | None = None, rate: float | None = None
    ) -> None:
        """``n`` more units done; ``postfix``: figures of the last one (e.g. loss, lr); ``rate``:
        units/s to show (default: the units after the compiling one over the time since it)."""
        if not self.enabled:
            return
        self.done += n
        first, self._compiling = self._compiling, False
        now = time.perf_counter()
        if first:
            self._rate_from = (self.done, now)
        if self.tty:
            if self._bar is None:
                self._bar = self._new_bar()
            else:
                self._bar.update(n)
            if postfix:
                self._bar.set_postfix(postfix, refresh=False)
        elif first or self.done >= self._next or self.done >= self.total:
            while self._next <= self.done:
                self._next += self.every
            self._line(now, first, postfix, rate)

    def _line(
        self, now: float, first: bool, postfix: Mapping[str, Any] | None, rate: float | None
    ) -> None:
        head = f"{self.desc}: " + self.count.format(
            done=self.done, total=self.total, unit=self.unit
        )
        parts = []
        if first:
            head += f" (compiled and ran in {now - self._t0:.1f} s)"
        else:
            if rate is None:
                start, t_start = self._rate_from
                rate = (self.done - start) / (now - t_start) if now > t_start else 0.0
            if rate > 0:
                eta = clock((self.total - self.done) / rate)
                parts.append(f"{rate:.1f} {self.unit}s/s, ETA {eta}")
        if postfix:
            parts.extend(f"{k} {v}" for k, v in postfix.items())
        self._print(", ".join([head, *parts]))

    def note(self, text: str) -> None:
        """A line ``DESC: text`` of its own: above the bar on a terminal, else among the lines."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(f"{self.desc}: {text}", file=self.stream)
        else:
            self._print(f"{self.desc}: {text}")

    def close(self) -> None:
        """Close the bar (if any)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
