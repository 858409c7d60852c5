"""`jaxparadigm run CONFIG --num-processes N`: real multi-process runs on jax.distributed (issue 14).

Every group runs on 127.0.0.1 with bounded waits, and teardown kills whatever a test started.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from jaxparadigm.app.train_launch import launch
from jaxparadigm.build import train_from_config as train
from jaxparadigm.cli import main
from jaxparadigm.errors import ConfigError, InputError
from jaxparadigm.train.launch import free_port, worker_env
from jaxparadigm.train.metrics import read_metrics
from tests.train.conftest import tiny_config, tiny_raw

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path, name="mp", steps=8, **train) -> Path:
    raw = tiny_raw(tmp_path, name, model={"hidden": [16, 16]})
    raw["train"].update(steps=steps, log_every=1, eval_every=4)
    raw["train"]["sharding"] = {"mode": "fsdp", "min_size": 1}
    raw["train"].update(train)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _losses(run_dir: Path) -> list[float]:
    records = read_metrics(run_dir / "metrics.jsonl")
    return [r["loss"] for r in sorted(records, key=lambda r: r["step"]) if "loss" in r]


def _one_process_losses(tmp_path, path: Path, steps: int | None = None) -> list[float]:
    """The same config in this process: 1 process x the 4 devices of tests/conftest.py."""
    assert jax.device_count() == 4
    raw = yaml.safe_load(path.read_text())
    raw["train"]["checkpoint"] = {"every": 0}
    raw["train"].pop("faults", None)
    raw["train"]["steps"] = steps or raw["train"]["steps"]
    sections = {k: raw[k] for k in ("model", "data", "optim", "train")}
    return train(tiny_config(tmp_path / "one", name="one", **sections), progress=False).losses


def test_worker_env_names_the_group_and_the_devices():
    env = worker_env(
        {"XLA_FLAGS": "--xla_foo --xla_force_host_platform_device_count=8"}, "h:1", 3, 2, 2
    )
    assert env["JAXPARADIGM_COORDINATOR_ADDRESS"] == "h:1"
    assert (env["JAXPARADIGM_NUM_PROCESSES"], env["JAXPARADIGM_PROCESS_ID"]) == ("3", "2")
    assert env["XLA_FLAGS"] == "--xla_foo --xla_force_host_platform_device_count=2"
    assert worker_env({}, "h:1", 1, 0, None).get("XLA_FLAGS") is None
    assert 0 < free_port() < 65536


def test_bad_launches_are_refused_before_any_process_starts(tmp_path, capsys):
    path = _config(tmp_path)
    with pytest.raises(ConfigError, match="train.sharding.mode: got 'none'"):
        launch(path, ["train.sharding.mode=none"], num_processes=2)
    with pytest.raises(ConfigError, match="task: got 'overflow'"):
        launch(path, ["task=overflow"], num_processes=2)
    with pytest.raises(InputError, match="--num-processes: got 0"):
        launch(path, num_processes=0)
    assert not (tmp_path / "mp").exists()  # nothing started, nothing written
    assert main(["run", str(path), "--devices-per-process", "2"]) == 2
    assert "--devices-per-process: given without --num-processes" in capsys.readouterr().err
    assert main(["run", str(path), "--num-processes", "2", "train.steps=zero"]) == 2
    assert "config key 'train.steps'" in capsys.readouterr().err


def test_a_configured_coordinator_with_num_processes_is_refused_at_once(tmp_path):
    """Issue 24 #5: both workers took process_id 0 from the config and the group hung for the
    init timeout (314 s), then said 'run the same command to resume'."""
    path = _config(tmp_path)
    start = time.monotonic()
    with pytest.raises(ConfigError) as err:
        launch(path, ["train.distributed.coordinator_address=127.0.0.1:1234"], num_processes=2)
    assert time.monotonic() - start < 5 and not (tmp_path / "mp").exists()
    msg = str(err.value)
    assert msg.startswith("train.distributed.coordinator_address: got '127.0.0.1:1234', expected")
    assert "\n" not in msg and "resume" not in msg


def test_two_processes_of_two_devices_equal_one_process_of_four(tmp_path, capfd):
    """The quick multi-process check of the default run: fsdp over 2 x 2 CPU devices gives the
    loss curve of one process with 4 devices; process 0 writes the report and metrics."""
    path = _config(tmp_path, checkpoint={"every": 4})
    report = launch(path, num_processes=2, devices_per_process=2, timeout_s=240)
    assert report == tmp_path / "mp" / "report.md"
    text = report.read_text()
    assert "mode `fsdp` over 4 device(s) in 2 process(es)" in text
    assert f"report: {report}" in capfd.readouterr().out  # printed by process 0
    got = _losses(tmp_path / "mp")
    np.testing.assert_allclose(got, _one_process_losses(tmp_path, path), rtol=1e-5)
    assert sorted(os.listdir(tmp_path / "mp" / "checkpoints")) == ["4", "8"]  # written together
    assert (tmp_path / "mp" / "logs" / "process_1.log").is_file()


# --- slow: failures and resume -----------------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _wait_for_steps(metrics: Path, steps: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        if (
            metrics.exists()
            and sum('"loss"' in line for line in metrics.read_text().splitlines()) >= steps
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"{metrics}: fewer than {steps} steps before the deadline")


def _kill_all(pids) -> None:
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_killing_one_worker_stops_the_group_with_a_clear_error(tmp_path):
    path = _config(tmp_path, steps=100_000)
    cmd = [sys.executable, "-m", "jaxparadigm", "run", str(path), "--num-processes", "2",
           "--devices-per-process", "2"]  # fmt: skip
    launcher = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    workers = []
    try:
        _wait_for_steps(tmp_path / "mp" / "metrics.jsonl", 5, time.monotonic() + 240)
        workers = _children(launcher.pid)
        assert len(workers) == 2
        killed_at = time.monotonic()
        os.kill(workers[1], signal.SIGKILL)
        _, err = launcher.communicate(timeout=60)
        took = time.monotonic() - killed_at
    finally:
        _kill_all([launcher.pid, *workers])
    assert launcher.returncode == 3, err[-2000:]
    line = [x for x in err.splitlines() if "jaxparadigm run: error:" in x][-1]
    assert "process 1 of 2 was killed by SIGKILL" in line
    assert "process 0: stopped by the launcher" in line and "run the same command to resume" in line
    assert "Traceback" not in err and "JaxRuntimeError" not in err  # issue 34: one clear line
    assert took < 30  # bounded: the launcher's poll (0.1 s) + its grace (3 s), not a hang
    assert not any(_alive(pid) for pid in workers)  # no stray process


@pytest.mark.slow
def test_without_the_launcher_jax_ends_the_survivor_within_the_heartbeat_timeout(tmp_path):
    """A scheduler-started group (no launcher): JAX's coordination service terminates the
    survivor of a killed peer after train.distributed.heartbeat_timeout_s, with a clear message."""
    path = _config(tmp_path, steps=100_000, distributed={"heartbeat_timeout_s": 5})
    coordinator = f"127.0.0.1:{free_port()}"
    logs = [(tmp_path / f"w{i}.log").open("w") for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "jaxparadigm", "run", str(path)],
            cwd=ROOT,
            env=worker_env(dict(os.environ), coordinator, 2, i, 2),
            stdout=logs[i],
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for i in range(2)
    ]
    try:
        _wait_for_steps(tmp_path / "mp" / "metrics.jsonl", 5, time.monotonic() + 240)
        killed_at = time.monotonic()
        procs[1].kill()
        procs[0].wait(timeout=90)
        took = time.monotonic() - killed_at
    finally:
        _kill_all([p.pid for p in procs])
        for f in logs:
            f.close()
    out = (tmp_path / "w0.log").read_text()
    assert procs[0].returncode == -signal.SIGABRT  # JAX's runtime ends it on purpose
    assert "detected fatal errors. This most likely indicates that another task died" in out
    assert took < 5 + 30  # the heartbeat timeout plus start-up slack on a loaded machine


@pytest.mark.slow
def test_a_killed_two_process_run_resumes_from_its_checkpoint(tmp_path):
    """kill_at SIGKILLs both workers before step 10 (checkpoints at 4 and 8): the launcher exits 3;
    the same command with the fault removed resumes from step 8 and the curve equals one
    uninterrupted process of 4 devices."""
    path = _config(tmp_path, steps=16, checkpoint={"every": 4}, faults={"kill_at": 10})
    with pytest.raises(Exception, match="was killed by SIGKILL") as err:
        launch(path, num_processes=2, devices_per_process=2, timeout_s=240)
    assert type(err.value).__name__ == "WorkerFailed"
    assert sorted(os.listdir(tmp_path / "mp" / "checkpoints")) == ["4", "8"]
    launch(
        path, ["train.faults.kill_at=null"], num_processes=2, devices_per_process=2, timeout_s=240
    )
    records = read_metrics(tmp_path / "mp" / "metrics.jsonl")
    assert any(r.get("event") == "resume" and "step 8" in r["message"] for r in records)
    got = _losses(tmp_path / "mp")
    assert len(got) == 16  # each step once: the records after step 8 were dropped on resume
    whole = _one_process_losses(tmp_path, path, steps=20)
    np.testing.assert_allclose(got, whole[:16], rtol=1e-5)
    # the 2-process checkpoint (step 16) resumes in one process of 4 devices, too
    raw = yaml.safe_load(path.read_text())
    sections = {k: raw[k] for k in ("model", "data", "optim", "train")}
    sections["train"] = {**sections["train"], "steps": 20, "faults": {}}
    more = train(tiny_config(tmp_path, name="mp", **sections), progress=False)
    assert more.resumed_from == 16
    np.testing.assert_allclose(more.losses, whole[16:], rtol=1e-5)
