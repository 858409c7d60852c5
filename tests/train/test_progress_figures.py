"""Progress lines and report figures are those of the step they name (issue 35): a line's loss is
its own step's (not the last logged step's), "step 1 (compiled and ran in T s)" counts from the
call's start, the summary's steps/s is the rate of the steps (not diluted by the final evaluation
and plots), a resumed call's report names the step its first loss belongs to."""

import re
import time

import pytest

from jaxparadigm.build import train_from_config
from jaxparadigm.train.metrics import StepClock
from tests.train.conftest import tiny_config

LINE = re.compile(r"tiny: step (\d+)/(\d+)(.*)")


def _lines(err: str) -> dict[int, str]:
    return {int(m[1]): m[3] for m in LINE.finditer(err)}


def test_each_progress_line_shows_its_own_steps_loss(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    cfg = tiny_config(tmp_path, train={"steps": 20, "log_every": 10, "eval_every": 10})
    result = train_from_config(cfg, progress=True)
    lines = _lines(capfd.readouterr().err)
    assert set(lines) == {1, *range(2, 21, 2)}, lines
    for step, text in lines.items():
        shown = float(re.search(r"loss (\S+),", text)[1])
        assert shown == pytest.approx(result.losses[step - 1], abs=6e-5), (step, text)
    # steps 12 and 18 are not logged (log_every 10): the old lines repeated step 10's loss there
    assert lines[12] != lines[10].replace("step 10", "step 12")


def test_the_last_lines_rate_is_the_summarys(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    drawn = []

    def slow_plot(records, run_dir):  # plots after the last step must not lower the rate
        time.sleep(1.0)
        drawn.append(run_dir)
        return []

    cfg = tiny_config(tmp_path, train={"steps": 20, "log_every": 10, "eval_every": 10})
    result = train_from_config(cfg, progress=True, plot=slow_plot, write_plots=True)
    assert drawn
    last = _lines(capfd.readouterr().err)[20]
    assert f"{result.steps_per_second:.1f} steps/s" in last, (last, result.steps_per_second)


def test_step_one_counts_from_the_calls_start(tmp_path, capfd, monkeypatch):
    from jaxparadigm.common.progress import Progress

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    stream = __import__("io").StringIO()
    t0 = time.perf_counter() - 6.0
    bar = Progress(4, "demo", count="step {done}/{total}", stream=stream, t0=t0, compiles=True)
    bar.update(1, {"loss": "1.0000"})
    assert "step 1/4 (compiled and ran in 6.0 s)" in stream.getvalue()


def test_the_clock_stops_at_the_last_step():
    clock = StepClock()
    for _ in range(3):
        clock.timed(lambda: time.sleep(0.01))
    rate = clock.steps_per_second()
    time.sleep(0.2)  # final evaluation, checkpoint, plots
    assert clock.steps_per_second() == rate
    assert 20 < rate < 110  # two timed steps of ~10 ms over ~20 ms


class _Result:
    def __init__(self, losses, resumed_from):
        self.losses, self.resumed_from = losses, resumed_from


def test_a_resumed_reports_first_loss_is_named_by_its_step():
    from jaxparadigm.app.train_task import _loss_line

    line = _loss_line(_Result([0.5, 0.4, 0.3], 6))
    assert line.startswith("- train loss at step 7 / step 9: 0.5 / 0.3")
    assert "steps 1-6 ran before the resume" in line
    assert _loss_line(_Result([2.0, 1.0], None)).startswith("- train loss at step 1 / step 2:")
