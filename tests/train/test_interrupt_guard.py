"""Ctrl-C during a checkpoint write is held until the write is complete (interrupt_guard, issue 35).

The failure this pins: a SIGINT landing inside orbax's save abandoned it half-way and printed
``Exception ignored in <BaseEventLoop.__del__>`` tracebacks after the CLI's one-line message
(tests/app/test_run_ownership.py::test_ctrl_c_ends_with_one_line_and_exit_130, about 1 run in 15).
"""

import signal
import threading

import chex
import numpy as np
import pytest

from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import Checkpointer
from jaxparadigm.train.interrupt_guard import deferring_interrupts

CFG = config_from_dict({"name": "interrupt"})


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own SIGINT handler (raise ``KeyboardInterrupt``), as in a terminal, whatever the
    session inherited: a suite started in the background (``cmd &``, ``nohup``) inherits SIGINT
    ignored, and Python then installs no handler, so these tests saw no KeyboardInterrupt."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_sigint_inside_the_block_is_raised_after_it():
    before = signal.getsignal(signal.SIGINT)
    ran = []
    with pytest.raises(KeyboardInterrupt):
        with deferring_interrupts():
            signal.raise_signal(signal.SIGINT)
            ran.append("rest of the block")  # not cut off by the signal
    assert ran == ["rest of the block"]
    assert signal.getsignal(signal.SIGINT) is before


def test_no_sigint_no_interrupt_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGINT)
    with deferring_interrupts():
        assert signal.getsignal(signal.SIGINT) is not before  # held inside
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):  # and a SIGINT after the block acts at once
        signal.raise_signal(signal.SIGINT)


def test_a_custom_handler_is_called_once_after_the_block():
    calls = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        with deferring_interrupts():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            assert calls == []
        assert calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_error_in_the_block_still_restores_the_handler():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(RuntimeError, match="boom"):
        with deferring_interrupts():
            raise RuntimeError("boom")
    assert signal.getsignal(signal.SIGINT) is before


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferring_interrupts():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_the_block_runs_unchanged():
    seen, errors = [], []

    def worker():
        try:
            with deferring_interrupts():
                seen.append(signal.getsignal(signal.SIGINT))
        except Exception as e:  # signal.signal outside the main thread would raise ValueError
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors == [] and seen == [signal.getsignal(signal.SIGINT)]


def _state(step):
    return {"step": np.asarray(step, np.int32), "w": np.arange(6, dtype=np.float32) * step}


def test_ctrl_c_in_the_middle_of_a_save_leaves_a_complete_checkpoint(tmp_path, monkeypatch):
    ck = Checkpointer(tmp_path / "c", CFG, keep=3)
    ck.save(_state(1))
    real_save = ck._manager.save

    def interrupted_save(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)  # Ctrl-C as orbax starts writing
        return real_save(*args, **kwargs)

    monkeypatch.setattr(ck._manager, "save", interrupted_save)
    with pytest.raises(KeyboardInterrupt):
        ck.save(_state(2))
    monkeypatch.undo()
    assert ck.all_steps() == [1, 2] and ck.incomplete_reason(2) is None
    chex.assert_trees_all_equal(ck.restore(_state(0)), _state(2))
    ck.close()
