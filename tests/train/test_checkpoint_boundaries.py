"""The checkpointer at its edges (issue 39): the warning about an incomplete step points at the
caller's line, and the save points of a watched save carry the step being saved (the kill
matrix's coordinates: ``step:index@process``).

Each test killed a one-line mutant of ``train/checkpoint.py`` that the earlier tests let through
(``make mutation MODULE=train.checkpoint``).
"""

import shutil
import warnings
from pathlib import Path

import numpy as np

from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import Checkpointer
from jaxparadigm.train.faults import SAVE_POINT_LOG_ENV

CFG = config_from_dict({"name": "edges"})


def _state(step):
    return {"step": np.asarray(step, np.int32), "w": np.full(3, step, np.float32)}


def test_the_incomplete_step_warning_names_the_callers_line(tmp_path):
    ck = Checkpointer(tmp_path / "c", CFG)
    for s in (1, 2):
        ck.save(_state(s))
    shutil.rmtree(Path(ck.directory) / "1" / "meta")
    fresh = Checkpointer(ck.directory, CFG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        steps = fresh.all_steps()
    assert steps == [2]
    (w,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert w.filename == __file__, w.filename  # stacklevel=2: this line, not the library's


def test_watched_save_points_carry_the_saved_step(tmp_path, monkeypatch):
    log = tmp_path / "points.log"
    monkeypatch.setenv(SAVE_POINT_LOG_ENV, str(log))
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save(_state(7))
    ck.close()
    rows = [line.split(" ", 3) for line in log.read_text().splitlines()]
    assert rows and {r[1] for r in rows} == {"7"}
    assert [int(r[2]) for r in rows] == list(range(len(rows)))  # numbered from 0, in order
    assert rows[0][3] == "begin" and rows[-1][3] == "done"
