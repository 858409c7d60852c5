"""SIGKILL at 20 random moments during checkpoint saves and rotations (issue 10, slow).

One training run (``jaxparadigm run``, a checkpoint every 2 steps, keep 2: a save and a rotation
every other step) is killed with SIGKILL 20 times, each time at a random moment after a random
number of saves has been seen in flight, and restarted. After every kill the newest *complete*
step on disk is computed here independently (files present, metadata parses), and the restarted
run must report that it resumed from exactly that step. The run then finishes, and its final
checkpoint must be bitwise equal to that of an uninterrupted run of the same config.
"""

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import chex
import pytest
import yaml

from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import Checkpointer
from jaxparadigm.train.metrics import read_metrics
from tests.train.conftest import tiny_regression_raw

STEPS = 400


def _newest_complete(ck_dir: Path) -> int | None:
    """Independent oracle: the highest numbered step whose files are all there and whose
    metadata parses as a signed JSON object."""
    best = None
    for p in ck_dir.iterdir() if ck_dir.exists() else []:
        files = [p / "meta" / "metadata", p / "state" / "_METADATA", p / "state" / "manifest.ocdbt"]
        if not (p.name.isdigit() and all(f.is_file() for f in files)):
            continue
        try:
            ok = "signature" in json.loads(files[0].read_text())
        except (OSError, ValueError):
            ok = False
        if ok:
            best = max(best or 0, int(p.name))
    return best


def _in_flight(ck_dir: Path) -> bool:
    """A save (orbax tmp directory) or a rotation (``.deleted``) is under way."""
    try:
        names = os.listdir(ck_dir)
    except FileNotFoundError:
        return False
    return any("tmp" in n or n == ".deleted" for n in names)


def _resume_messages(metrics: Path) -> list[int]:
    try:
        lines = metrics.read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line being written
        if r.get("event") == "resume":
            out.append(r["message"])
    return out


def _wait(pred, proc, timeout=300.0, poll=0.001) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(poll)
    raise TimeoutError("the training run made no progress")


@pytest.mark.slow
def test_sigkill_during_saves_and_rotations_resumes_bitwise(tmp_path):
    rng = random.Random(20240610)
    raw = tiny_regression_raw(
        tmp_path, "run", STEPS, eval_every=50, log_every=10, checkpoint={"every": 2, "keep": 2}
    )
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(raw))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(Path.cwd())}
    cmd = [sys.executable, "-m", "jaxparadigm", "run", str(path)]
    ck_dir, metrics = tmp_path / "run" / "checkpoints", tmp_path / "run" / "metrics.jsonl"

    kills, landed, expected = 0, 0, None
    while kills < 20:
        inode = metrics.stat().st_ino if metrics.exists() else None
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if expected is not None:  # the restarted run resumed from the newest complete step:
                want = f"resumed from checkpoint step {expected};"  # (its metrics file is new)

                def resumed(w=want, old=inode):
                    fresh = metrics.exists() and metrics.stat().st_ino != old
                    return fresh and any(m.startswith(w) for m in _resume_messages(metrics))

                assert _wait(resumed, proc)
            for _ in range(rng.randint(2 if expected is None else 1, 4)):  # saves seen in flight
                assert _wait(lambda: not _in_flight(ck_dir), proc)
                assert _wait(lambda: _in_flight(ck_dir), proc)
            time.sleep(rng.uniform(0.0, 0.02))
            proc.kill()
        finally:
            proc.kill()
            proc.wait()
        assert proc.returncode == -9
        kills += 1
        landed += _in_flight(ck_dir)
        newest = _newest_complete(ck_dir)
        assert newest is not None and (expected is None or newest >= expected)
        expected = newest

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    resumes = _resume_messages(metrics)
    assert resumes[-1].startswith(f"resumed from checkpoint step {expected};")
    print(f"kills that landed during a save or rotation: {landed} of 20")
    assert landed >= 10, f"only {landed} of 20 kills landed during a save or rotation"

    ref = subprocess.run([*cmd, "name=ref"], env=env, capture_output=True, text=True, timeout=900)
    assert ref.returncode == 0, ref.stderr[-2000:]
    cfg = config_from_dict(raw)
    template = train(cfg, run_dir=tmp_path / "tpl", stop_at=0, progress=False).state
    with Checkpointer(ck_dir, cfg) as a, Checkpointer(tmp_path / "ref" / "checkpoints", cfg) as b:
        assert a.latest_step() == b.latest_step() == STEPS
        chex.assert_trees_all_equal(a.restore(template), b.restore(template))
    steps = [r["step"] for r in read_metrics(metrics) if "loss" in r]
    assert steps == list(range(10, STEPS + 1, 10))  # each logged step once, in order
