"""The one advisory lock: no link followed, a regular file only, one refusal naming the holder's
pid at once, a dead holder's lock taken over."""

import os
import subprocess
import sys
import time

import pytest

from jaxparadigm.common.errors import InputError
from jaxparadigm.common.file_lock import file_lock, lock_holder

WHAT = "the test's lock file"


def _busy(holder: str) -> str:
    return f"busy: {holder}"


def _lock(path, command="test run"):
    return file_lock(path, command, what=WHAT, busy=_busy)


def test_the_holder_writes_its_pid_and_command_and_a_second_taker_is_refused(tmp_path):
    path = tmp_path / "lock"
    with _lock(path, "index add"):
        text = path.read_text()
        assert text.startswith(f"pid {os.getpid()} (index add, since ") and text.endswith(")\n")
        t = time.monotonic()
        with pytest.raises(InputError) as err, _lock(path, "index build"):
            pass
        assert time.monotonic() - t < 0.5  # at once: the holder's text is there
        assert str(err.value) == f"busy: {text.strip()}"
    with _lock(path, "again"):  # released on exit
        assert path.read_text().startswith(f"pid {os.getpid()} (again, since ")


def test_a_dead_holders_lock_is_taken_over(tmp_path):
    path = tmp_path / "lock"
    code = (
        "import sys, time; from pathlib import Path; from jaxparadigm.common.file_lock import "
        f"file_lock\nwith file_lock(Path({str(path)!r}), 'holder', what='w', busy=str):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(InputError, match=rf"^busy: pid {proc.pid} \(holder, since "):
            with _lock(path):
                pass
    finally:
        proc.kill()
        proc.wait()
    assert path.read_text().startswith(f"pid {proc.pid} (holder")  # left behind by the dead
    with _lock(path):
        assert path.read_text().startswith(f"pid {os.getpid()} (test run, since ")


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(InputError) as err, _lock(tmp_path / "lock"):
        pass
    assert str(err.value) == (
        f"{tmp_path / 'lock'}: {WHAT} is a symlink; a writer never follows a link: remove it "
        "(the lock file is created again) and run this again"
    )
    assert target.read_text() == "keep me\n"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match="is a symlink"), _lock(tmp_path / "dangling"):
        pass
    assert not (tmp_path / "nowhere").exists()  # not created through the link


@pytest.mark.parametrize(
    "make, what",
    [(os.mkfifo, "a FIFO"), (os.mkdir, "a folder")],
)
def test_a_lock_that_is_not_a_regular_file_is_refused_naming_what_it_is(tmp_path, make, what):
    path = tmp_path / "lock"
    make(path)
    with pytest.raises(InputError) as err, _lock(path):
        pass
    assert str(err.value) == (
        f"{path}: {WHAT} is {what}, expected a regular file: remove it and run this again"
    )


def test_a_lock_in_a_missing_folder_is_one_input_error(tmp_path):
    path = tmp_path / "no" / "lock"
    with pytest.raises(InputError) as err, _lock(path):
        pass
    assert str(err.value) == f"{path}: cannot open {WHAT} (No such file or directory)"


def test_the_holder_text_is_reread_while_empty_then_named_another_process(tmp_path):
    path = tmp_path / "lock"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDWR)
    try:
        t = time.monotonic()
        assert lock_holder(fd, wait_s=0.2) == "another process"
        assert 0.2 <= time.monotonic() - t < 1.0
        os.pwrite(fd, b"pid 7 (\xff add)\n", 0)
        assert lock_holder(fd) == "pid 7 (\ufffd add)"
    finally:
        os.close(fd)
