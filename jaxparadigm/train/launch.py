"""A local group of worker processes on ``jax.distributed`` (C5.2), under ``jaxparadigm run
CONFIG --num-processes N`` (:func:`jaxparadigm.app.train_launch.launch` checks the config first,
so a bad config fails before anything starts, exit 2).

In the spirit of ``torchrun --standalone --nproc-per-node N``, :func:`launch_workers`

1. takes the worker command (``python -m jaxparadigm run CONFIG [overrides]``) and run directory;
2. picks a free TCP port on 127.0.0.1 for the coordinator (process 0 hosts it);
3. starts N workers, each ``python -m jaxparadigm run CONFIG [overrides]`` in its own session with
   ``JAXPARADIGM_COORDINATOR_ADDRESS=127.0.0.1:PORT``, ``JAXPARADIGM_NUM_PROCESSES=N``,
   ``JAXPARADIGM_PROCESS_ID=i`` (read by :mod:`jaxparadigm.train.distributed`) and, with
   ``devices_per_process=K``, ``XLA_FLAGS=--xla_force_host_platform_device_count=K`` (K CPU devices
   each). Process 0 writes to this terminal (progress, ``report: PATH``); process ``i >= 1`` to
   ``<out_dir>/<name>/logs/process_<i>.log``. A worker's native libraries write to its stderr
   (``jaxparadigm.common.native_stdout``: its stdout carries only what Python prints, such as
   ``search --json``'s document), and gloo's "[Gloo] Rank N is connected" lines, whole or in
   the pieces two threads interleave, are dropped from it (:data:`CHATTER`). On Linux a worker
   is killed when the launcher dies (``PR_SET_PDEATHSIG``), so no worker outlives it;
4. watches them (every 0.1 s): when all exit 0 the run is done; when one fails (non-zero status or
   a signal) the others get SIGTERM (their whole process group), SIGKILL after ``grace_s``
   seconds, and :class:`WorkerFailed` (exit 3) names the process, how it ended, when, and its
   log; a worker that refused its input (status 2) is reported as an ``InputError`` (exit 2).
   Where several have ended by the same poll, one killed by a signal is named before one that
   exited with a status (the survivor of a killed peer fails too, a moment later);
5. keeps process 0's stderr from its first ``Traceback`` line on back until the group has ended
   (:class:`_Held`): when process 0 failed itself, or all succeeded, it is written to this
   terminal then; when another process failed (or the time limit passed), that text and all
   process 0 writes after the failure (the survivor's Gloo ``JaxRuntimeError`` of a dead peer,
   JAX's "SIGTERM caught") go to ``logs/process_0.log`` instead, so the terminal shows one clear
   error line.

Without the launcher (a cluster's scheduler starts the processes), a peer's death is still bounded:
JAX's coordination service terminates the others after ``train.distributed.heartbeat_timeout_s``.
"""

from __future__ import annotations

import ctypes
import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from jaxparadigm.common.native_stdout import ENV_NATIVE_STDOUT
from jaxparadigm.common.progress import PROGRESS_TTY_ENV
from jaxparadigm.errors import InputError, TrainingAborted
from jaxparadigm.train.distributed import ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID

__all__ = ["WorkerFailed", "free_port", "launch_workers", "worker_env"]

_POLL_S = 0.1
_PR_SET_PDEATHSIG = 1


class WorkerFailed(TrainingAborted):
    """A worker of a launched group died or failed; the others were stopped (CLI exit 3)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def worker_env(
    base: dict, coordinator: str, num_processes: int, process_id: int, devices: int | None
) -> dict:
    """The environment of worker ``process_id``: ``base`` plus the three JAXPARADIGM_* variables
    of the group, :data:`ENV_NATIVE_STDOUT`, unbuffered output and, with ``devices``, that many
    forced host (CPU) devices."""
    env = {
        **base,
        ENV_COORDINATOR: coordinator,
        ENV_NUM_PROCESSES: str(num_processes),
        ENV_PROCESS_ID: str(process_id),
        ENV_NATIVE_STDOUT: "stderr",
        "PYTHONUNBUFFERED": "1",
    }
    if devices is not None:
        flags = [
            f
            for f in env.get("XLA_FLAGS", "").split()
            if not f.startswith("--xla_force_host_platform_device_count")
        ]
        env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={devices}"])
    return env


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the launcher's finally still stops workers
        pass


def _how(status: int) -> str:
    if status < 0:
        return f"was killed by {signal.Signals(-status).name}"
    if status == 134:
        return "aborted (status 134, SIGABRT: JAX's coordination service ends a broken group)"
    return f"exited with status {status}"


def _error_line(path: Path) -> str:
    """The last ``error:`` line a worker wrote to its log ('' when none)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if "error:" in line), "")


def _stop(procs: list[subprocess.Popen], grace_s: float) -> set[int]:
    """SIGTERM every running worker's process group, SIGKILL what is left after ``grace_s``
    (JAX's runtime catches SIGTERM as a preemption notice); returns the indices it stopped."""
    stopped = {i for i, p in enumerate(procs) if p.poll() is None}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(_POLL_S)
    for p in procs:
        p.wait()
    return stopped


def launch_workers(
    cmd: list[str],
    run_dir: Path,
    *,
    num_processes: int,
    devices_per_process: int | None = None,
    grace_s: float = 3.0,
    timeout_s: float | None = None,
    advice: str | None = None,
    lead_grace_s: float = 0.0,
) -> Path:
    """Run ``cmd`` as ``num_processes`` local workers on ``jax.distributed``; return the report
    path ``run_dir/report.md`` written by process 0 (C5.2). See the module docstring for what
    happens on failure; worker ``i >= 1`` logs to ``run_dir/logs/process_<i>.log``.

    ``timeout_s`` (None: no limit) stops the whole group and raises :class:`WorkerFailed` when
    the run takes longer. ``advice``: the failure message's last clause (default: where the
    checkpoints are, run the same command to resume). ``lead_grace_s``: when a process other than
    0 fails, process 0 gets this long to end by itself before it is stopped (``serve``: it answers
    the requests it holds with 503 first).
    """
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    coordinator = f"127.0.0.1:{free_port()}"
    procs: list[subprocess.Popen] = []
    files, relays = [], []
    held, divert = _Held(), False
    start = time.monotonic()
    try:
        for i in range(num_processes):
            out = None
            if i > 0:
                out = (logs / f"process_{i}.log").open("wb")
                files.append(out)
            env = worker_env(dict(os.environ), coordinator, num_processes, i, devices_per_process)
            procs.append(_spawn(cmd, env, i))
            relays += _relays(procs[-1], i, out, held)
        failed = _watch(procs, start, timeout_s)
        if failed is None:
            return run_dir / "report.md"
        if failed not in (0, "timeout"):
            _wait_lead(procs[0], lead_grace_s)
        divert = failed != 0  # process 0's output from now on is a consequence, not the cause
        if divert:
            held.hold_all()
        stopped = _stop(procs, grace_s)
        raise _failure(failed, procs, stopped, start, logs, run_dir, divert, advice)
    finally:
        _stop(procs, grace_s)
        for t in relays:
            t.join(timeout=grace_s)
        held.release(logs / "process_0.log" if divert else None)
        for f in files:
            f.close()


def _wait_lead(lead: subprocess.Popen, grace_s: float) -> None:
    """Give process 0 up to ``grace_s`` seconds to end by itself."""
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and lead.poll() is None:
        time.sleep(_POLL_S)


def _spawn(cmd: list[str], env: dict, i: int) -> subprocess.Popen:
    """Worker ``i`` in its own session (process 0's stderr piped apart), dying with its parent."""
    if i == 0 and sys.stderr.isatty():
        env[PROGRESS_TTY_ENV] = "1"  # its stderr is our pipe, but it ends on a terminal
    with warnings.catch_warnings():  # JAX's os.fork warning: the child execs at once
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        return subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if i == 0 else subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )


class _Held:
    """Process 0's stderr kept back: from its first ``Traceback`` line on (a traceback ends a
    process), or everything after :meth:`hold_all`; :meth:`release` writes it out (C5.2)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._all = False
        self._lines: list[bytes] = []

    def hold_all(self) -> None:
        """Keep back every line process 0 writes from now on."""
        with self._lock:
            self._all = True

    def keep(self, line: bytes) -> bool:
        """Keep ``line`` back (True) when holding, or when it starts a traceback; else False."""
        with self._lock:
            if self._all or self._lines or line.lstrip(b"\r").startswith(_TRACEBACK):
                self._lines.append(line)
                return True
            return False

    def release(self, log: Path | None) -> None:
        """Write what was kept back to our stderr (``log`` None) or append it to ``log``."""
        with self._lock:
            self._all, lines, self._lines = True, self._lines, []  # a late line stays held
        if log is None:
            write, flush = _sink(sys.stderr)
            for line in lines:
                write(line)
            flush()
        elif lines:
            with log.open("ab") as f:
                f.write(_DIVERTED + b"".join(lines))


_TRACEBACK = b"Traceback (most recent call last):"
_DIVERTED = b"--- process 0's stderr after another process failed (kept off the terminal) ---\n"


def _relays(proc: subprocess.Popen, i: int, out, held: _Held) -> list[threading.Thread]:
    """Started threads copying worker ``i``'s output: process 0's to our stdout/stderr (its
    stderr through ``held``), the others' (both streams) to their log file ``out``."""
    pipes: list[tuple[Any, Any, _Held | None, bool]] = [(proc.stdout, out, None, True)]
    if i == 0:
        pipes = [(proc.stdout, sys.stdout, None, False), (proc.stderr, sys.stderr, held, True)]
    threads = [threading.Thread(target=_relay, args=p, daemon=True) for p in pipes]
    for t in threads:
        t.start()
    return threads


#: Output of third-party libraries that is noise for a user: gloo's "[Gloo] Rank N is connected to
#: M peer ranks. Expected number of connected peer ranks is : M" (jaxlib's gloo has no switch to
#: silence it). Two of its threads may write their lines in interleaved pieces ("[Gloo] Rank 0 is
#: connected to 1[Gloo] Rank 0 is connected to 1 peer ranks. ...\n peer ranks. ...\n"), so the
#: pattern matches either piece anywhere in a line.
CHATTER = re.compile(
    rb"\[Gloo\] Rank \d+ is connected to \d+"
    rb"| peer ranks\. Expected number of connected peer ranks is : \d+"
)
#: A partial line starting with one of these is kept until its end comes (it may be chatter, or
#: the first line of a traceback, which :class:`_Held` decides on).
_WAIT_FOR_END = (b"[", b" peer", b"Tr")


def _without_chatter(line: bytes) -> bytes | None:
    """``line`` without :data:`CHATTER`'s pieces; None when nothing but them (and blanks) was in
    it."""
    cleaned = CHATTER.sub(b"", line)
    if cleaned == line:
        return line
    return None if not cleaned.strip(b"\r\n \t") else cleaned


def _sink(dst):
    """``(write, flush)`` of bytes into ``dst``: a binary file, or a text stream (through its
    ``buffer`` when it has one, else decoded as UTF-8)."""
    buffer = getattr(dst, "buffer", None)
    if buffer is not None:
        dst.flush()
        return buffer.write, buffer.flush
    if isinstance(dst, io.TextIOBase):
        return (lambda b: dst.write(b.decode("utf-8", "replace"))), dst.flush
    return dst.write, dst.flush


def _relay(src, dst, held: _Held | None = None, chatter: bool = True) -> None:
    """Copy a worker's output pipe ``src`` to ``dst`` (a binary file or a text stream such as
    ``sys.stdout``), dropping :data:`CHATTER` (``chatter``: a worker's stdout, which carries only
    Python's writes, is copied as it is) and passing whole lines through ``held`` (which may keep
    them back). A partial line not starting with one of :data:`_WAIT_FOR_END` (a progress bar's
    carriage-return updates) is passed on at once."""
    pending = b""

    def out(text: bytes) -> None:
        kept = _without_chatter(text) if chatter else text
        if kept and (held is None or not held.keep(kept)):
            write(kept)

    try:
        write, flush = _sink(dst)
        for chunk in iter(lambda: os.read(src.fileno(), 65536), b""):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                out(line + b"\n")
            if pending and not (chatter and pending.lstrip(b"\r").startswith(_WAIT_FOR_END)):
                out(pending)
                pending = b""
            flush()
        if pending:
            out(pending)
            flush()
    except (OSError, ValueError):  # the destination was closed (the launcher is exiting)
        pass
    finally:
        src.close()


def _watch(procs, start: float, timeout_s: float | None) -> int | str | None:
    """Poll until all workers exit 0 (None), one fails (its index: of those seen failed at the
    same poll, the first killed by a signal, else the first), or ``timeout_s`` ("timeout")."""
    while True:
        statuses = [p.poll() for p in procs]
        bad = [i for i, s in enumerate(statuses) if s not in (None, 0)]
        if bad:
            return min(bad, key=lambda i: (statuses[i] >= 0, i))
        if all(s == 0 for s in statuses):
            return None
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            return "timeout"
        time.sleep(_POLL_S)


def _failure(
    failed,
    procs,
    stopped: set[int],
    start: float,
    logs: Path,
    run_dir: Path,
    divert: bool = False,
    advice: str | None = None,
):
    """The exception of a failed group: InputError for a worker's status 2, else WorkerFailed.
    ``divert``: process 0's later output goes to its log (named here)."""
    n = len(procs)
    elapsed = time.monotonic() - start
    fates = "; ".join(
        f"process {i}: "
        + (
            "stopped by the launcher"
            if i in stopped
            else "finished"
            if p.returncode == 0
            else _how(p.returncode)
        )
        + (
            f" (its output after the failure, if any: {logs / 'process_0.log'})"
            if divert and i == 0
            else ""
        )
        for i, p in enumerate(procs)
        if i != failed
    )
    resume = advice or (
        f"checkpoints (if any) are in {run_dir / 'checkpoints'}: run the same command to resume"
    )
    if failed == "timeout":
        return WorkerFailed(
            f"the group of {n} processes ran past the time limit ({elapsed:.1f} s) and was "
            f"stopped ({fates}); {resume}"
        )
    status = procs[failed].returncode
    where = "its output is above" if failed == 0 else f"log {logs / f'process_{failed}.log'}"
    tail = _error_line(logs / f"process_{failed}.log") if failed else ""
    head = f"process {failed} of {n} {_how(status)} after {elapsed:.1f} s ({where})"
    if status == 2:
        return InputError(f"{head}: it refused its input" + (f": {tail}" if tail else ""))
    return WorkerFailed(f"{head}; {fates}; {resume}")
