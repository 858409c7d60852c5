"""``search``/``serve --num-processes N``: the same command as a local ``jax.distributed`` group,
started and watched by :func:`jaxparadigm.train.launch.launch_workers` -- the launcher of
``jaxparadigm run --num-processes N``, with its environment variables
(``JAXPARADIGM_COORDINATOR_ADDRESS``, ``JAXPARADIGM_NUM_PROCESSES``, ``JAXPARADIGM_PROCESS_ID``),
its log files and its failure rule (a dead process stops the group; the command exits non-zero
naming it). A worker is the same command without ``--num-processes``; it joins the group in
:func:`join_group` (which is also how a cluster's scheduler starts one process per host: the same
variables, or SLURM's), opens only its own shards, and only process 0 prints the answer (``search``)
or owns the HTTP socket (``serve``). Worker ``i >= 1`` writes to ``DIR/logs/process_<i>.log``, DIR a
fresh temporary folder named on stderr.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["SERVE_LEAD_GRACE_S", "join_group", "launch_group", "log_assignment"]

#: ``serve``: how long process 0 may keep answering 503 after another process died before the
#: launcher stops it (it stops itself :data:`~jaxparadigm.app.serve_command.DRAIN_S` after).
SERVE_LEAD_GRACE_S = 10.0


def join_group() -> bool:
    """Join the ``jax.distributed`` group the environment names (``jaxparadigm run``'s
    variables); False (nothing done) when it names none. Call before anything starts JAX."""
    from jaxparadigm.train.distributed import (
        DistributedSettings,
        distributed_spec,
        initialize_distributed,
    )

    if distributed_spec(DistributedSettings()) is None:
        return False
    return initialize_distributed(DistributedSettings())


def log_assignment(command: str, searcher) -> None:
    """One stderr line: which shards and rows this process of the group holds."""
    if searcher.assignment is not None:
        print(f"jaxparadigm {command}: {searcher.assignment}", file=sys.stderr, flush=True)


def launch_group(
    command: str,
    argv: list[str],
    *,
    num_processes: int,
    devices_per_process: int | None,
    lead_grace_s: float = 0.0,
) -> None:
    """Run ``jaxparadigm COMMAND *argv`` as ``num_processes`` local workers until they all end
    (``WorkerFailed``/``InputError`` from the launcher when one fails)."""
    from jaxparadigm.app.train_launch import check_process_counts
    from jaxparadigm.train.launch import launch_workers

    check_process_counts(num_processes, devices_per_process)

    run_dir = Path(tempfile.mkdtemp(prefix=f"jaxparadigm-{command}-"))
    others = "process 1" if num_processes == 2 else f"processes 1-{num_processes - 1}"
    print(
        f"jaxparadigm {command}: {num_processes} processes on jax.distributed; the logs of "
        f"{others} in {run_dir / 'logs'}",
        file=sys.stderr,
        flush=True,
    )
    previous = {}
    if threading.current_thread() is threading.main_thread():
        # SIGTERM as SIGINT (main's KeyboardInterrupt, jaxparadigm.app.interrupts): either
        # stops the group (SIGTERM to each worker) and exits 130 with "stopped by SIG..."
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, _interrupt)
    try:
        launch_workers(
            [sys.executable, "-m", "jaxparadigm", command, *argv],
            run_dir,
            num_processes=num_processes,
            devices_per_process=devices_per_process,
            advice=f"run the same command again (logs: {run_dir / 'logs'})",
            lead_grace_s=lead_grace_s,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(signum: int, _frame) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")
