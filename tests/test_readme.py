"""The README is a test (issue 25): every shell command of README.md's ```bash blocks, in order,
in a fresh clone of this repository, each must exit 0.

Run it with ``make readme-test`` (CI does, before ``make test``) or
``python -m pytest -q -m readme tests/test_readme.py``. Marked ``slow`` and ``readme``: it takes a
few minutes (longer the first time: the first pydoc ``search`` fills ~/.cache/jaxparadigm).

* The clone: ``git clone --local`` of this checkout's committed HEAD into a temporary directory
  (uncommitted changes are not in it).
* Its environment: ``JAXPARADIGM_README_VENV=/path/to/.venv`` (``make readme-test`` sets it to the
  Makefile's ``.venv``; CI's venv the same way) is symlinked as the clone's ``.venv``; the clone's
  ``pyproject.toml`` is then dated in the past and make gets ``-o .venv/.installed`` so that the
  README's ``make`` commands never reinstall into the shared venv, and ``PYTHONPATH`` puts the
  clone's ``jaxparadigm`` first (the venv's editable install points elsewhere). Without the
  variable the README's first ``make`` creates and installs a fresh ``.venv`` in the clone
  (network needed). ``XLA_FLAGS`` is the user's, without the 4 CPU devices that
  ``tests/conftest.py`` forces for the tests: the commands get the CPU device count a user gets
  (``--cpu-devices`` default ``auto``), unless a command sets its own.
* Sizes: :data:`OVERRIDES` appends small sizes (steps, rounds, a test subset) to the commands it
  matches, each with its reason; :data:`SKIPPED` lists the commands that need a cluster or
  another shell, with the reason. Both lists must match README commands (a stale entry fails).
* :data:`BACKGROUND`: ``serve`` runs until stopped; it is started in the background, the next
  command runs once it prints its "serving" line, and it gets Ctrl-C (SIGINT) after the block.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.readme]

ROOT = Path(__file__).resolve().parent.parent
VENV_ENV = "JAXPARADIGM_README_VENV"
TIMEOUT_S = 900  # one command

#: (regex on the command, text appended before any trailing comment, why).
OVERRIDES = [
    (r"^make demo\b", "RUN_ARGS='train.steps=40'", "the demo's 800 steps -> 40"),
    (r"^make test\b", "PYTEST_ARGS='tests/test_cli.py -k version'", "the suite runs in CI anyway"),
    (r"jaxparadigm run configs/default\.yaml", "train.steps=40", "800 steps -> 40"),
    (r"jaxparadigm claims\b", "--only C2.5 C4.3", "two quick claims instead of sixteen"),
    (r"jaxparadigm bench optim\b", "--params 100000 --reps 2", "a smaller quick size"),
    (r"jaxparadigm run configs/charlm_pydoc\.yaml", "train.steps=8 train.eval_every=4 "
     "train.checkpoint.every=4", "600 steps -> 8"),
    (r"jaxparadigm bench train\b", "--rounds 1 --steps 4", "one round of 4 steps"),
]  # fmt: skip

#: exact command -> why it is not run here.
SKIPPED = {
    'export JAXPARADIGM_COORDINATOR_ADDRESS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
    "| head -n1):12345": "SLURM: needs a cluster allocation",
    "srun jaxparadigm run configs/charlm_pydoc.yaml name=charlm_slurm "
    "train.sharding.mode=fsdp": "SLURM: needs a cluster allocation",
    "jaxparadigm run configs/charlm_pydoc.yaml name=charlm_k8s train.sharding.mode=fsdp": (
        "Kubernetes Indexed Job: runs in the pods, with their environment"
    ),
}

#: regex -> (the line that says it is ready). Started in the background, SIGINT after its block.
BACKGROUND = {r"jaxparadigm serve\b": r"serving \d+ passages"}


def readme_commands(text: str) -> list[list[str]]:
    """The logical command lines of each ```bash block (continuations joined, comment-only and
    blank lines dropped), block by block."""
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M)
    out = []
    for block in blocks:
        commands, current = [], ""
        for line in block.splitlines():
            if not current and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.rstrip().endswith("\\"):
                current += line.rstrip()[:-1].rstrip() + " "
                continue
            commands.append(" ".join((current + line.strip()).split()))
            current = ""
        out.append(commands)
    return out


def split_comment(command: str) -> tuple[str, str]:
    """``(command, comment)`` at the first ``#`` outside quotes that follows a space."""
    quote = None
    for i, ch in enumerate(command):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i and command[i - 1] == " ":
            return command[:i].rstrip(), command[i:]
    return command, ""


def with_overrides(command: str) -> str:
    """The command with the :data:`OVERRIDES` that match it appended (before its comment)."""
    body, _ = split_comment(command)
    for pattern, extra, _why in OVERRIDES:
        if re.search(pattern, body):
            body += " " + extra
    return body


def test_readme_parsing_rules():
    """The rules the README test relies on, on a made-up block (no clone needed)."""
    text = "```bash\n# note\nA=1 \\\n  cmd x   # say '#'\n\ncmd 'a # b' y\n```\n"
    assert readme_commands(text) == [["A=1 cmd x # say '#'", "cmd 'a # b' y"]]
    assert split_comment("cmd 'a # b' y # c") == ("cmd 'a # b' y", "# c")
    assert with_overrides("jaxparadigm claims   # ledger") == "jaxparadigm claims --only C2.5 C4.3"


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone the repository for the README test")
    where = tmp_path_factory.mktemp("readme") / "clone"
    subprocess.run(["git", "clone", "-q", "--local", str(ROOT), str(where)], check=True)
    venv = os.environ.get(VENV_ENV)
    if venv:
        (where / ".venv").symlink_to(Path(venv).resolve(), target_is_directory=True)
        os.utime(where / "pyproject.toml", (0, 0))  # older than the venv's install stamp
    return where


def _run_env(clone: Path) -> dict:
    from tests.conftest import USER_XLA_FLAGS

    env = {**os.environ, "PYTHONPATH": str(clone)}
    env.pop("JAXPARADIGM_REQUIRE_ORACLES", None)  # the README's commands are not oracle tests
    env.pop("XLA_FLAGS")  # conftest's 4 forced CPU devices are the tests', not a user's
    if USER_XLA_FLAGS is not None:
        env["XLA_FLAGS"] = USER_XLA_FLAGS
    return env


def _shared_venv_safe(command: str) -> str:
    """With a shared venv, ``make X`` becomes ``make -o .venv/.installed X``: make never
    reinstalls the project into it (MAKEFLAGS cannot carry ``-o``)."""
    if os.environ.get(VENV_ENV) and command.startswith("make "):
        return "make -o .venv/.installed " + command[len("make ") :]
    return command


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"a background command did not stop on SIGINT:\n{out[-3000:]}")
    assert proc.returncode == 0, out[-3000:]
    return out


def _start(command: str, ready: str, clone: Path, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + TIMEOUT_S
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if re.search(ready, line):
            return proc
    proc.kill()
    pytest.fail(f"{command!r} never printed {ready!r}:\n{''.join(seen)[-3000:]}")


def test_every_readme_command_runs_in_a_fresh_clone(clone):
    blocks = readme_commands((clone / "README.md").read_text(encoding="utf-8"))
    flat = [split_comment(c)[0] for block in blocks for c in block]
    stale = [c for c in SKIPPED if c not in flat]
    unused = [p for p, *_ in OVERRIDES if not any(re.search(p, c) for c in flat)]
    assert not stale and not unused, f"stale SKIPPED {stale} / unused OVERRIDES {unused}"
    env = _run_env(clone)
    ran = []
    for block in blocks:
        background = []
        try:
            for command in block:
                if split_comment(command)[0] in SKIPPED:
                    continue
                cmd = _shared_venv_safe(with_overrides(command))
                ready = next((r for p, r in BACKGROUND.items() if re.search(p, cmd)), None)
                if ready is not None:
                    background.append(_start(cmd, ready, clone, env))
                    ran.append(cmd)
                    continue
                t0 = time.monotonic()
                proc = subprocess.run(
                    ["bash", "-c", cmd],
                    cwd=clone,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=TIMEOUT_S,
                )
                took = time.monotonic() - t0
                assert proc.returncode == 0, (
                    f"README command failed (exit {proc.returncode}, {took:.0f} s): {cmd}\n"
                    f"{proc.stdout[-4000:]}"
                )
                ran.append(cmd)
        finally:
            for proc in background:
                _stop(proc)
    assert ran, "no README command ran"
