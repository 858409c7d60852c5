"""One progress mechanism: plain lines off a terminal (never a carriage return), a bar on one
(of a sane width when the terminal reports 0 columns), the compile note, the off switches."""

import io
import os
import re
import select
import time

import pytest

from jaxparadigm.common.progress import (
    DEFAULT_WIDTH,
    PROGRESS_TTY_ENV,
    Progress,
    clock,
    progress_disabled_by_env,
    terminal_width,
)


@pytest.fixture(autouse=True)
def _progress_on(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv(PROGRESS_TTY_ENV, raising=False)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_every_tenth_and_at_the_end_with_rate_and_eta():
    out = io.StringIO()
    bar = Progress(20, "index build", unit="passage", stream=out, lines=4)
    for _ in range(10):
        bar.update(2)
    bar.close()
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        f"index build: {n}/20 passages"
        for n in (6, 10, 16, 20)  # every ceil(20 / 4) = 5
    ]
    assert re.fullmatch(r"index build: 6/20 passages, [\d.]+ passages/s, ETA \d+:\d\d", lines[0])
    assert "\r" not in out.getvalue()


def test_the_first_unit_is_timed_from_t0_and_the_rate_counts_the_units_after_it():
    out = io.StringIO()
    count = "step {done}/{total}"
    bar = Progress(4, "tiny", count=count, stream=out, t0=time.perf_counter() - 3.0, compiles=True)
    bar.update(1, {"loss": "0.5"})
    time.sleep(0.05)
    bar.update(1)
    bar.update(2, rate=2.0)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"tiny: step 1/4 \(compiled and ran in 3\.\d s\), loss 0\.5", lines[0])
    rate = float(re.fullmatch(r"tiny: step 2/4, ([\d.]+) steps/s, ETA 0:0\d", lines[1])[1])
    assert 1.0 < rate <= 20.0  # one step in >= 50 ms; not 2 steps over the compiling time
    assert lines[2] == "tiny: step 4/4, 2.0 steps/s, ETA 0:00" and len(lines) == 3


def test_a_resumed_count_starts_at_initial():
    out = io.StringIO()
    bar = Progress(100, "index add", initial=60, unit="passage", stream=out, lines=2)
    bar.update(20)
    bar.update(20)
    assert [x.split(",")[0] for x in out.getvalue().splitlines()] == [
        "index add: 80/100 passages",
        "index add: 100/100 passages",
    ]


@pytest.mark.parametrize("value", ["1", "True", "yes"])
def test_tqdm_disable_silences_every_form(monkeypatch, value):
    monkeypatch.setenv("TQDM_DISABLE", value)
    for stream in (io.StringIO(), _Tty()):
        bar = Progress(3, "x", stream=stream, compiles=True)
        bar.note("hello")
        bar.update(3)
        bar.close()
        assert stream.getvalue() == "" and not bar.enabled


def test_the_off_switches_read_as_tqdm_reads_them():
    assert not progress_disabled_by_env({"TQDM_DISABLE": "0"})
    assert not progress_disabled_by_env({"TQDM_DISABLE": " False "})
    assert not progress_disabled_by_env({})
    assert progress_disabled_by_env({"TQDM_DISABLE": "1"})
    out = io.StringIO()
    Progress(3, "x", stream=out, enabled=False).update(3)  # --no-progress
    Progress(3, "x", initial=3, stream=out).update(0)  # nothing to do
    assert out.getvalue() == ""


def test_on_a_terminal_a_note_while_compiling_then_the_bar():
    tty = _Tty()
    bar = Progress(8, "demo", stream=tty, compiles=True)
    assert tty.getvalue() == "demo: compiling, then running the first step ...\n"
    assert bar._bar is None
    bar.update(1)
    assert bar._bar is not None and bar._bar.n == 1 and bar._bar.ncols == DEFAULT_WIDTH
    bar.note("checkpoint saved")
    bar.close()
    assert "demo: checkpoint saved\n" in tty.getvalue() and "1/8" in tty.getvalue()


def test_the_relay_variable_draws_the_bar_into_a_pipe(monkeypatch):
    monkeypatch.setenv(PROGRESS_TTY_ENV, "1")
    out = io.StringIO()  # not a terminal, but relayed to one by the launcher
    bar = Progress(4, "mp", stream=out)
    bar.update(2)
    bar._bar.refresh()  # tqdm redraws at most every 0.1 s by itself
    bar.close()
    assert bar.tty and "\r" in out.getvalue() and "2/4" in out.getvalue()


def test_a_terminal_of_zero_width_still_shows_a_bar():
    master, slave = os.openpty()  # a fresh pty reports 0 columns: tqdm alone draws nothing
    try:
        stream = os.fdopen(slave, "w")
        assert os.get_terminal_size(slave).columns == 0 and terminal_width(stream) == DEFAULT_WIDTH
        bar = Progress(10, "enc", unit="sentence", stream=stream)
        bar.update(3)
        bar._bar.refresh()
        stream.flush()
        shown = ""
        while select.select([master], [], [], 0.5)[0]:  # everything written so far
            shown += os.read(master, 65536).decode()
        bar.close()
        stream.close()
    finally:
        os.close(master)
    assert "3/10" in shown and "enc" in shown


def test_the_width_of_a_stream_that_is_no_terminal_is_the_default():
    assert terminal_width(io.StringIO()) == DEFAULT_WIDTH
    assert terminal_width(object()) == DEFAULT_WIDTH


def test_a_note_off_a_terminal_is_a_line_among_the_lines():
    out = io.StringIO()
    bar = Progress(2, "claims", unit="claim", stream=out, lines=2)
    bar.note("C1.1 (1/2) started")
    bar.update(1, {"last": "C1.1 in 0.1 s"})
    lines = out.getvalue().splitlines()
    assert lines[0] == "claims: C1.1 (1/2) started"
    assert lines[1].startswith("claims: 1/2 claims, ") and lines[1].endswith(", last C1.1 in 0.1 s")


def test_the_clock():
    assert [clock(s) for s in (0, 59.4, 61, 3600, 3725)] == [
        "0:00",
        "0:59",
        "1:01",
        "1:00:00",
        "1:02:05",
    ]
