"""Ctrl-C in every command from the first line of ``main`` (jaxparadigm/app/interrupts.py): one
stderr line, exit 130, nothing swallowed, also in a command started in the background.

What each test caught in the code before: a Ctrl-C during start-up (the parser imports JAX) was a
raw traceback; an interrupt raised inside a garbage-collector callback (JAX's
``_xla_gc_callback``) was printed as "Exception ignored ..." and the run went on to exit 0; a
``run`` started in the background (SIGINT inherited ignored) ignored ``kill -INT``; an import cut
short inside ``__set_name__`` ended in a ``RuntimeError`` traceback.
"""

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from jaxparadigm import cli
from jaxparadigm.app.interrupts import interrupts_raised, raised_by_interrupt
from tests.train.conftest import tiny_raw

ROOT = str(Path(__file__).resolve().parents[2])


def _main_with(monkeypatch, capsys, command) -> tuple[int, list[str]]:
    """``main(["bench", "x"])`` with ``command`` as bench's handler: its status, stderr lines."""
    monkeypatch.setitem(cli.COMMANDS, "bench", command)
    monkeypatch.delenv("JAXPARADIGM_DEBUG", raising=False)
    status = cli.main(["bench", "x"])
    return status, capsys.readouterr().err.splitlines()


def test_an_interrupt_swallowed_by_a_gc_callback_is_raised_again_in_the_command(
    monkeypatch, capsys
):
    """SIGINT handled inside a gc callback: not printed, raised again in the command's own code,
    so main says "interrupted" and exits 130 (the command ran on to exit 0)."""
    reached = []

    def interrupt_in_gc(phase, info):
        if phase == "start":
            gc.callbacks.remove(interrupt_in_gc)
            signal.raise_signal(signal.SIGINT)  # its handler runs at this callback's next line
            reached.append("callback")

    def command(args):
        gc.callbacks.append(interrupt_in_gc)
        gc.collect()
        reached.append("after gc")  # the swallowed interrupt lets this line run
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pass  # the interrupt raised again lands here
        reached.append("ran on")
        return 0

    status, err = _main_with(monkeypatch, capsys, command)
    assert (status, err, reached) == (130, ["jaxparadigm bench: interrupted"], ["after gc"])
    assert interrupt_in_gc not in gc.callbacks


def test_an_interrupt_during_start_up_is_one_line(monkeypatch, capsys):
    """Ctrl-C while the parser is built (it imports JAX): one line naming the command, 130."""

    def parser():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main(["run", "configs/default.yaml"]) == 130
    assert capsys.readouterr().err.splitlines() == ["jaxparadigm run: interrupted"]
    assert cli.main(["--version"]) == 130  # no command named yet
    assert capsys.readouterr().err.splitlines() == ["jaxparadigm: interrupted"]


def test_an_error_raised_because_of_an_interrupt_is_the_interrupt_and_a_bug_keeps_its_traceback(
    monkeypatch, capsys
):
    """Python turns an interrupt inside ``__set_name__`` (a class body of a module being
    imported) into a RuntimeError caused by it: main exits 130 in one line; a RuntimeError of
    its own is a bug and propagates."""

    class Field:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def import_cut_short(args):
        type("Transform", (), {"idx": Field()})
        return 0

    status, err = _main_with(monkeypatch, capsys, import_cut_short)
    assert (status, err) == (130, ["jaxparadigm bench: interrupted"])

    def bug(args):
        try:
            raise ValueError("inner")
        except ValueError as exc:
            raise RuntimeError("a real bug") from exc

    with pytest.raises(RuntimeError, match="a real bug"):
        _main_with(monkeypatch, capsys, bug)
    cause = KeyboardInterrupt()
    wrapped = RuntimeError("x")
    wrapped.__context__ = ValueError("y")
    wrapped.__context__.__cause__ = cause
    assert raised_by_interrupt(wrapped) and raised_by_interrupt(cause)
    assert not raised_by_interrupt(RuntimeError("x"))


def test_the_handlers_before_are_put_back():
    before_hook = sys.unraisablehook
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_raised():
            assert signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, signal.SIG_DFL)
            assert sys.unraisablehook is not before_hook
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert sys.unraisablehook is before_hook
    finally:
        signal.signal(signal.SIGINT, previous)


def _config(tmp_path) -> Path:
    raw = tiny_raw(tmp_path, "bg", train={"steps": 20, "log_every": 10})
    path = tmp_path / "bg.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize("command", ["run", "search"])
def test_a_command_started_in_the_background_stops_on_sigint_in_one_line(tmp_path, command):
    """Started as a shell's background job (SIGINT inherited ignored), SIGINT from its start on:
    exit 130 and the one line (``run`` ignored it and trained to exit 0)."""
    argv = [str(_config(tmp_path))] if command == "run" else ["open a file", "--top-k", "1"]
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "XLA_FLAGS")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxparadigm", command, *argv],
        env={**env, "JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT, "JAXPARADIGM_DEBUG": ""},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        proc.send_signal(signal.SIGINT)  # ignored until main installs its handler
        time.sleep(0.05)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err[-2000:]
    assert err.splitlines() == [f"jaxparadigm {command}: interrupted"], err[-2000:]
    assert out == ""
