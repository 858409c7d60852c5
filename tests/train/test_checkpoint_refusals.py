"""Issue 24 (#7, #18): a folder holding another step's checkpoint is refused before any training;
a damaged checkpoint's refusal is one short line with the way out, and never followed by orbax's
"Event loop is closed" tracebacks; a structure mismatch names the first differing leaf."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from orbax.checkpoint._src import asyncio_utils

from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import Checkpointer, CheckpointError
from jaxparadigm.train.orbax_reads import draining_event_loops, run_until_drained
from tests.train.conftest import damaged_checkpoint_run, tiny_regression_raw

CFG = config_from_dict({"name": "refusals"})


def _state(step):
    return {"step": np.asarray(step, np.int32), "w": np.full(3, step, np.float32)}


def test_a_copy_of_step_2_in_folder_4_is_refused(tmp_path):
    """Before: step 2's content was restored as step 4 (steps 3-4 retrained, duplicate records)."""
    ck = Checkpointer(tmp_path / "c", CFG)
    for s in (2, 4):
        ck.save(_state(s))
    shutil.rmtree(Path(ck.directory) / "4")
    shutil.copytree(Path(ck.directory) / "2", Path(ck.directory) / "4")
    with pytest.raises(CheckpointError) as err:
        Checkpointer(ck.directory, CFG).restore(_state(0))
    assert str(err.value) == (
        f"checkpoint step 4 in {ck.directory}: its metadata says step 2, not 4: the folder "
        "holds another step's checkpoint (copied or renamed). To resume from step 2, move "
        f"{str(Path(ck.directory) / '4')!r} out of the checkpoint directory; or give the run "
        "another name (name=...)"
    )
    assert Checkpointer(ck.directory, CFG).restore(_state(0), step=2)["w"][0] == 2.0


@pytest.mark.slow
def test_a_copied_step_stops_the_run_before_it_trains(tmp_path):
    raw = tiny_regression_raw(tmp_path, "cp", steps=4, checkpoint={"every": 2})
    train(config_from_dict(raw), progress=False)
    ckpts = tmp_path / "cp" / "checkpoints"
    shutil.rmtree(ckpts / "4")
    shutil.copytree(ckpts / "2", ckpts / "4")
    metrics = (tmp_path / "cp" / "metrics.jsonl").read_text()
    longer = config_from_dict({**raw, "train": {**raw["train"], "steps": 6}})
    with pytest.raises(CheckpointError, match="metadata says step 2, not 4"):
        train(longer, progress=False)
    assert (tmp_path / "cp" / "metrics.jsonl").read_text() == metrics  # no record added
    assert sorted(os.listdir(ckpts)) == ["2", "4"]


def test_structure_mismatch_names_the_first_differing_leaf(tmp_path):
    """Before: 'tree structure differs (2 stored leaves vs 2 expected)', naming nothing."""
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save({"step": np.asarray(1, np.int32), "a": np.zeros(2), "b": np.zeros(2)}, step=1)
    with pytest.raises(CheckpointError) as err:
        ck.restore({"step": np.asarray(0, np.int32), "a": np.zeros(2), "c": np.zeros(2)})
    assert str(err.value).endswith(
        "tree structure differs from the template: leaf 1: stored \"['b']\", expected "
        "\"['c']\" (3 stored leaves vs 3 expected)"
    )
    with pytest.raises(CheckpointError, match=r"leaf 3: stored nothing, expected \"\['z'\]\" "):
        ck.restore({"step": 0, "a": np.zeros(2), "b": np.zeros(2), "z": np.zeros(1)})
    meta = Path(ck.directory) / "1" / "meta" / "metadata"
    meta.write_text(meta.read_text().replace("['b']", "['c']"))  # one flipped byte
    with pytest.raises(
        CheckpointError,
        match=r"leaf 1: stored \"\['c'\]\", expected \"\['b'\]\" \(3 stored leaves vs 3 expected\)",
    ):
        ck.restore({"step": np.asarray(0, np.int32), "a": np.zeros(2), "b": np.zeros(2)})


def _failing_call_with_a_read_in_flight(reached_closed_loop: list):
    """A coroutine like orbax's restore: one task per leaf, one fails at once while another waits
    on a completion that a foreign thread delivers later (tensorstore's threads do this)."""

    async def read_later():
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def complete():  # on a tensorstore-like thread, 0.1 s later
            time.sleep(0.1)
            try:
                loop.call_soon_threadsafe(done.set_result, None)
            except RuntimeError as exc:
                reached_closed_loop.append(exc)

        threading.Thread(target=complete).start()
        await done

    async def fail_now():
        raise ValueError("NOT_FOUND: one leaf")

    async def restore():
        await asyncio.gather(read_later(), fail_now())

    return restore()


def test_a_failed_call_drains_its_reads_before_the_loop_closes():
    """The cause of 'Event loop is closed' (issue 24 #18): orbax's runner closed the loop while
    a read was still in flight; the draining runner waits for it."""
    closed = []
    with pytest.raises(ValueError, match="one leaf"):
        asyncio_utils._run_sync_via_new_loop(_failing_call_with_a_read_in_flight(closed))
    time.sleep(0.3)
    assert [str(e) for e in closed] == ["Event loop is closed"]  # orbax's own runner
    closed.clear()
    with pytest.raises(ValueError, match="one leaf"), draining_event_loops():
        asyncio_utils.run_sync(_failing_call_with_a_read_in_flight(closed))
    time.sleep(0.3)
    assert closed == []
    assert run_until_drained(asyncio.sleep(0, result=7)) == 7


@pytest.mark.slow
def test_twenty_cli_refusals_print_no_event_loop_traceback(tmp_path):
    """Issue 24 #18 / 25: 3 of 6 refusals printed 37-67 lines of 'Event loop is closed'."""
    path, env = damaged_checkpoint_run(tmp_path)
    noisy, lines = 0, set()
    for _ in range(20):
        out = subprocess.run(
            [sys.executable, "-m", "jaxparadigm", "run", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 2, out.stderr
        noisy += "Event loop is closed" in out.stderr or "Traceback" in out.stderr
        lines.add(out.stderr.strip())
    assert noisy == 0
    assert len(lines) == 1 and len(lines.pop().splitlines()) == 1
    assert json.loads((tmp_path / "dm" / "checkpoints" / "4" / "meta" / "metadata").read_text())
