"""Progress of ``index build``/``index add``: a bar on a terminal, plain lines elsewhere (C1.1).

* On a TTY: a tqdm bar of passages encoded.
* Not a TTY (``2> build.log``, CI, a pipe): a plain line every ``ceil(total / lines)`` passages
  and at the end (``index build: 512/2281 passages, 85.3 passages/s, ETA 0:21``); never a
  carriage return (issue 34, "Progress": the bar's ``\\r`` frames filled a redirected stderr).
* Off when ``enabled`` is false, or when ``TQDM_DISABLE`` is set to anything but ``""``/``0``/
  ``false``/``no`` (tqdm's own convention, as ``jaxparadigm run`` reads it).

The same two forms as training's step progress (``jaxparadigm.train.progress``), written for
passages here: the import-linter layers keep ``retrieval`` and ``train`` independent.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["PassageProgress"]


def _disabled_by_env() -> bool:
    value = os.environ.get("TQDM_DISABLE", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class PassageProgress:
    """Passages ``initial .. total`` encoded (module docstring: a bar or plain lines)."""

    def __init__(
        self,
        total: int,
        initial: int = 0,
        desc: str = "index",
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        lines: int = 10,
    ) -> None:
        self.total, self.done, self.desc = total, initial, desc
        self._start = initial
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and total > initial and not _disabled_by_env()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(self.enabled and isatty is not None and isatty())
        self.every = max(1, math.ceil((total - initial) / max(1, lines)))
        self._next = initial + self.every
        self._t0 = time.perf_counter()
        self._bar: tqdm | None = None
        if self.tty:
            from tqdm import tqdm as bar

            self._bar = bar(
                total=total, initial=initial, unit="passage", desc=desc, file=self.stream
            )

    def update(self, n: int) -> None:
        """``n`` more passages encoded."""
        if not self.enabled:
            return
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.done >= self._next or self.done >= self.total:
            while self._next <= self.done:
                self._next += self.every
            self._line()

    def _line(self) -> None:
        elapsed = time.perf_counter() - self._t0
        rate = (self.done - self._start) / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.desc}: {self.done}/{self.total} passages"]
        if rate > 0:
            parts.append(f"{rate:.1f} passages/s, ETA {_clock((self.total - self.done) / rate)}")
        print(", ".join(parts), file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar (if any)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
