"""Training progress a person can read, on a terminal and in a log file (C5.1).

* On a TTY: a tqdm bar, created once the first step (which includes jit compilation) has run, so
  its rate and ETA measure training, not compiling.
* Not a TTY (``> out.log``, CI, a launcher's pipe): a plain line every ``ceil(total / lines)``
  steps, the first step's one included (``step 1/800 (compiled and ran in 2.1 s)``, the time
  since ``t0``: the caller's start, set-up and compiling included), with the ETA from the steps
  after the first; never a carriage return. Each line's figures are those of the step it names
  (the caller passes that step's loss, and the rate it reports in its own summary).
* Off when ``enabled`` is false, or when ``TQDM_DISABLE`` is set to anything but ``""``/``0``/
  ``false`` (tqdm's own convention; ``jaxparadigm run --no-progress`` sets it for every process).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["PROGRESS_TTY_ENV", "StepProgress", "progress_disabled_by_env"]

#: Set to ``1`` by the multi-process launcher for process 0 when the launcher's own stderr is a
#: terminal: the worker's stderr is a pipe, but what it writes ends on that terminal.
PROGRESS_TTY_ENV = "JAXPARADIGM_PROGRESS_TTY"


def progress_disabled_by_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``TQDM_DISABLE`` asks for no progress output (any value but ''/0/false/no)."""
    value = (os.environ if environ is None else environ).get("TQDM_DISABLE", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class StepProgress:
    """Progress of steps ``start + 1 .. end`` (see the module docstring for the two forms)."""

    def __init__(
        self,
        start: int,
        end: int,
        desc: str,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        lines: int = 10,
        t0: float | None = None,
    ) -> None:
        self.start, self.end, self.desc = start, end, desc
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and end > start and not progress_disabled_by_env()
        isatty = getattr(self.stream, "isatty", None)
        tty = (isatty is not None and isatty()) or os.environ.get(PROGRESS_TTY_ENV) == "1"
        self.tty = bool(self.enabled and tty)
        self.every = max(1, math.ceil((end - start) / max(1, lines)))
        self._t0 = time.perf_counter() if t0 is None else t0  # a time.perf_counter() value
        self._t_warm: float | None = None  # end of the first (compiling) step
        self._bar: tqdm | None = None

    def update(self, done: int, postfix: dict | None = None, rate: float | None = None) -> None:
        """Step ``done`` (absolute) finished; ``postfix``: that step's figures (e.g. loss, lr);
        ``rate``: steps/s to show (default: steps after the first over the time since it)."""
        if not self.enabled:
            return
        first = self._t_warm is None
        if first:
            self._t_warm = time.perf_counter()
        if self.tty:
            self._bar_update(done, first, postfix)
        elif first or done == self.end or (done - self.start) % self.every == 0:
            self._line(done, first, postfix, rate)

    def _bar_update(self, done: int, first: bool, postfix: dict | None) -> None:
        if first:
            from tqdm.auto import tqdm as auto_tqdm

            self._bar = auto_tqdm(
                total=self.end - self.start,
                initial=done - self.start,
                desc=self.desc,
                leave=False,
                file=self.stream,
                dynamic_ncols=True,
            )
        else:
            assert self._bar is not None  # created by the first call
            self._bar.update(1)
        if postfix:
            self._bar.set_postfix(postfix, refresh=False)

    def _line(self, done: int, first: bool, postfix: dict | None, rate: float | None) -> None:
        now = time.perf_counter()
        head = f"{self.desc}: step {done}/{self.end}"
        parts = []
        if first:
            head += f" (compiled and ran in {now - self._t0:.1f} s)"
        else:
            assert self._t_warm is not None  # update() sets it before the first line
            if rate is None:
                warm_steps = done - self.start - 1
                rate = warm_steps / (now - self._t_warm) if now > self._t_warm else 0.0
            if rate > 0:
                parts.append(f"{rate:.1f} steps/s, ETA {_clock((self.end - done) / rate)}")
        if postfix:
            parts.extend(f"{k} {v}" for k, v in postfix.items())
        print(", ".join([head, *parts]), file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar (if any)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
