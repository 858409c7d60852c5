"""A kill matrix for checkpoints (issue 34): SIGKILL one of 2 processes at a save point.

The save points are the real ones (``jaxparadigm.train.faults``: every file Python writes,
renames or removes in the checkpoint directory during a save, orbax's barriers, the
checkpointer's own points), recorded from an uninterrupted 2-process run of the same config
(the reference, ``JAXPARADIGM_SAVE_POINT_LOG``). A case sets ``JAXPARADIGM_FAULT_SAVE_POINT`` so
that one process kills itself just before one point of the save of step 4 (keep 1: that save
also rotates step 2 out), and then asserts:

* the launcher reports the kill (exit 3 as WorkerFailed) naming the killed process;
* the newest complete checkpoint on disk (found here independently: files present, metadata
  parses) restores through ``Checkpointer.restore``, whose sha256 over every leaf's bytes proves
  it bitwise what was saved;
* the same command without the fault resumes from exactly that step, leaves no orbax temporary
  folder and no ``.deleted``, its loss curve equals the reference's exactly, and its final
  checkpoint is bitwise the reference's.

The cases are the commit rename of step 4 in process 0, and the first point of every kind (a file
write, a rename, a removal, a barrier, the checkpointer's own points), in each process; every case
is two 2-process launches (15-30 s), so the whole module is CI's full run (``ci_full``). A CI run
runs half of the matrix, the cases whose number has the parity of the commit's hash (as the
mutation gate's window moves with the commit, two commits in a row of different parity cover
all of it, 9 cases each, about 2 minutes of CI's time saved); ``JAXPARADIGM_KILL_MATRIX=all``
runs every case.
"""

import contextlib
import os
import subprocess
from pathlib import Path

import chex
import numpy as np
import pytest
import yaml

from jaxparadigm.app.train_launch import launch
from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import Checkpointer
from jaxparadigm.train.faults import SAVE_POINT_ENV, SAVE_POINT_LOG_ENV
from jaxparadigm.train.launch import WorkerFailed
from jaxparadigm.train.metrics import read_metrics
from tests.train.conftest import tiny_raw
from tests.train.test_sigkill_resume import _newest_complete

STEP = 4  # the save killed: step 2 exists before it; it rotates step 2 out (keep 1)


def _raw(tmp_path, name: str) -> dict:
    raw = tiny_raw(tmp_path, name, model={"hidden": [16, 16]})
    raw["train"].update(steps=6, log_every=1, eval_every=6)
    raw["train"]["sharding"] = {"mode": "fsdp", "min_size": 1}
    raw["train"]["checkpoint"] = {"every": 2, "keep": 1}
    return raw


@contextlib.contextmanager
def _env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _launch(path: Path):
    return launch(path, num_processes=2, devices_per_process=2, timeout_s=300)


def _losses(run_dir: Path) -> list[float]:
    records = read_metrics(run_dir / "metrics.jsonl")
    return [r["loss"] for r in sorted(records, key=lambda r: r["step"]) if "loss" in r]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run: its config file, losses, save points and a restore template."""
    tmp = tmp_path_factory.mktemp("kill_matrix")
    raw = _raw(tmp, "ref")
    path = tmp / "ref.yaml"
    path.write_text(yaml.safe_dump(raw))
    log = tmp / "points.log"
    with _env(**{SAVE_POINT_LOG_ENV: str(log)}):
        _launch(path)
    points: dict[int, list[str]] = {0: [], 1: []}
    for line in log.read_text().splitlines():
        process, step, j, name = line.split(" ", 3)
        if int(step) == STEP:
            assert int(j) == len(points[int(process)])  # numbered 0, 1, ... in order
            points[int(process)].append(name)
    cfg = config_from_dict(raw)
    template = train(cfg, run_dir=tmp / "tpl", stop_at=0, progress=False).state
    return {"raw": raw, "dir": tmp / "ref", "points": points, "cfg": cfg, "template": template}


def _first_of_each_kind(names: list[str]) -> list[int]:
    seen, out = set(), []
    for j, name in enumerate(names):
        kind = name.split(" ")[0]
        if kind not in seen:
            seen.add(kind)
            out.append(j)
    return out


def _kill_and_resume(tmp_path, reference, process: int, j: int) -> None:
    name = reference["points"][process][j]
    raw = {**reference["raw"], "out_dir": str(tmp_path), "name": "k"}
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump(raw))
    run, ck = tmp_path / "k", tmp_path / "k" / "checkpoints"
    with _env(**{SAVE_POINT_ENV: f"{STEP}:{j}@{process}"}):
        with pytest.raises(WorkerFailed, match=f"process {process} of 2 was killed by SIGKILL"):
            _launch(path)

    newest = _newest_complete(ck)
    assert newest in (2, STEP), (name, newest)
    with Checkpointer(ck, reference["cfg"]) as c:
        assert c.latest_step() == newest, name
        c.restore(reference["template"], step=newest)  # raises unless bitwise what was signed

    _launch(path)  # the same command, no fault: resumes
    records = read_metrics(run / "metrics.jsonl")
    resumes = [r["message"] for r in records if r.get("event") == "resume"]
    assert resumes and resumes[-1].startswith(f"resumed from checkpoint step {newest};"), name
    left = [p.name for p in ck.iterdir() if "tmp" in p.name or p.name == ".deleted"]
    assert left == [], (name, left)
    np.testing.assert_array_equal(_losses(run), _losses(reference["dir"]))
    with Checkpointer(ck, reference["cfg"]) as a, Checkpointer(reference["dir"] / "checkpoints",
                                                                reference["cfg"]) as b:  # fmt: skip
        assert a.latest_step() == b.latest_step() == 6
        chex.assert_trees_all_equal(
            a.restore(reference["template"]), b.restore(reference["template"])
        )


def test_the_save_points_are_the_real_ones(reference):
    """The recorded points of step 4's save hold what the matrix means to hit."""
    names = reference["points"][0]
    assert names[0] == "begin" and names[-1] == "done" and "saved" in names
    assert f"os.rename {STEP}.orbax-checkpoint-tmp" in names  # the commit
    assert any(
        n.startswith("open-for-write") and n.endswith("meta.orbax-checkpoint-tmp/metadata")
        for n in names
    )
    assert any(n.startswith("barrier") for n in names)
    assert "os.rename 2" in names  # the rotation: step 2 into .deleted
    assert reference["points"][1] and "barrier" in " ".join(reference["points"][1])


def test_a_kill_at_the_commit_rename_resumes_bitwise(tmp_path, reference):
    j = reference["points"][0].index(f"os.rename {STEP}.orbax-checkpoint-tmp")
    _kill_and_resume(tmp_path, reference, 0, j)


def _matrix_cases() -> list:
    # (process, kind index): resolved against the recorded points at run time
    return [(p, k) for p in (0, 1) for k in range(12)]


def in_this_commits_half(process: int, kind: int, commit: str) -> bool:
    """Whether case ``(process, kind)`` (number ``12 * process + kind``) is in ``commit``'s half:
    the cases whose number has the parity of the hash. No commit: every case."""
    return not commit or (12 * process + kind + int(commit, 16)) % 2 == 0


def _commit() -> str:
    if os.environ.get("JAXPARADIGM_KILL_MATRIX") == "all":
        return ""
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return run.stdout.strip() if run.returncode == 0 else ""


def test_two_commits_of_different_parity_cover_the_whole_matrix():
    odd, even = "f" * 40, "e" * 40
    for process, kind in _matrix_cases():
        assert in_this_commits_half(process, kind, odd) != in_this_commits_half(process, kind, even)
        assert in_this_commits_half(process, kind, "")
    assert sum(in_this_commits_half(0, k, odd) for k in range(12)) == 6


@pytest.mark.ci_full
@pytest.mark.parametrize(("process", "kind"), _matrix_cases())
def test_kill_matrix(tmp_path, reference, process, kind):
    if not in_this_commits_half(process, kind, _commit()):
        pytest.skip("the other half of the matrix runs on a commit of the other parity")
    firsts = _first_of_each_kind(reference["points"][process])
    if kind >= len(firsts):
        pytest.skip(f"process {process} has {len(firsts)} kinds of save point")
    _kill_and_resume(tmp_path, reference, process, firsts[kind])
