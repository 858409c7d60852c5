"""What the launcher relays when a worker dies (issue 34, "Runs"): one clear line, not the
survivor's Gloo traceback.

The workers here are small Python programs, not training runs (fast, deterministic): process 1
SIGKILLs itself, and process 0 then writes the traceback a real survivor writes (jaxlib's
``JaxRuntimeError: ... Gloo AllGather failed ... Connection reset by peer``) and exits 1; like
JAX's runtime, it takes SIGTERM as a preemption notice (one line) and goes on.
"""

import sys
import textwrap

import pytest

from jaxparadigm.train.launch import WorkerFailed, launch_workers

GLOO = "jax.errors.JaxRuntimeError: UNKNOWN: Gloo AllGather failed: Connection reset by peer"

WORKER = textwrap.dedent(
    f"""
    import os, signal, sys, time
    i, marker = int(os.environ["JAXPARADIGM_PROCESS_ID"]), sys.argv[1]
    failing, delay = int(sys.argv[2]), float(sys.argv[3])
    def caught(*_):  # as JAX's preemption notifier: a line, and the process goes on
        print("W preemption_notifier.cc:90] SIGTERM caught", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, caught)
    print(f"p{{i}}: step 1", file=sys.stderr, flush=True)
    if i == failing:
        open(marker, "w").close()
        if i == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError("process 0's own failure")
    while not os.path.exists(marker):
        time.sleep(0.005)
    time.sleep(delay)
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "x.py", line 1, in <module>', file=sys.stderr)
    print({GLOO!r}, file=sys.stderr, flush=True)
    sys.exit(1)
    """
)


def _launch(tmp_path, failing: int, delay: float = 0.0):
    cmd = [sys.executable, "-c", WORKER, str(tmp_path / "marker"), str(failing), str(delay)]
    with pytest.raises(WorkerFailed) as err:
        launch_workers(cmd, tmp_path / "run", num_processes=2, grace_s=3.0, timeout_s=60)
    return str(err.value)


# delay 0: both have ended by the launcher's next poll; 1.0: the launcher sees process 1 dead
# while process 0 still runs, and process 0's traceback comes while the group is being stopped
@pytest.mark.parametrize("delay", [0.0, 0.0, 1.0])
def test_a_killed_peer_gives_one_line_not_the_survivors_traceback(tmp_path, capfd, delay):
    message = _launch(tmp_path, failing=1, delay=delay)
    err = capfd.readouterr().err
    assert message.startswith("process 1 of 2 was killed by SIGKILL"), message
    assert "Traceback" not in err and "Gloo" not in err and "SIGTERM" not in err, err
    assert "p0: step 1" in err  # what process 0 wrote before the failure is still relayed
    log = (tmp_path / "run" / "logs" / "process_0.log").read_text()
    assert GLOO in log and "Traceback (most recent call last):" in log  # kept, off the terminal
    assert ("SIGTERM caught" in log) == (delay > 0)  # the launcher's SIGTERM came first
    assert (
        f"its output after the failure, if any: {tmp_path / 'run' / 'logs' / 'process_0.log'}"
        in message
    )


def test_process_0s_own_traceback_is_still_relayed(tmp_path, capfd):
    message = _launch(tmp_path, failing=0)
    err = capfd.readouterr().err
    assert message.startswith("process 0 of 2 exited with status 1"), message
    assert "Traceback (most recent call last):" in err and "process 0's own failure" in err
    assert not (tmp_path / "run" / "logs" / "process_0.log").exists()
