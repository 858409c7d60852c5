"""The README is a test (issue 25): every shell command of README.md's ```bash blocks, then of each
guide's in :data:`GUIDES` order, in a fresh clone of this repository, each must exit 0.

Run it with ``make readme-test`` (CI does, before ``make test``) or
``python -m pytest -q -m readme tests/test_readme.py``. The clone test is marked ``slow`` and
``readme``: it takes several minutes (longer the first time: the first pydoc ``search`` fills
~/.cache/jaxparadigm). The other tests here (parsing rules, the lists below against the files,
the guides against the site's table of contents, README.md's links) run in the default suite.

* The files: README.md first, then the guides of ``docs/guides/`` in :data:`GUIDES` order (every
  guide must be listed, and each is in the toctree of ``docs/index.md``), all commands in one
  clone, one after the other: a guide may use what the README's commands made (``.venv``).
* The clone: ``git clone --local`` of this checkout's committed HEAD into a temporary directory
  (uncommitted changes are not in it).
* Its environment: ``JAXPARADIGM_README_VENV=/path/to/.venv`` (``make readme-test`` sets it to the
  Makefile's ``.venv``; CI's venv the same way) is symlinked as the clone's ``.venv``; the clone's
  ``pyproject.toml`` is then dated in the past and make gets ``-o .venv/.installed`` so that the
  documented ``make`` commands never reinstall into the shared venv, and ``PYTHONPATH`` puts the
  clone's ``jaxparadigm`` first (the venv's editable install points elsewhere). Without the
  variable the README's first ``make`` creates and installs a fresh ``.venv`` in the clone
  (network needed). ``XLA_FLAGS`` is the user's, without the 4 CPU devices that
  ``tests/conftest.py`` forces for the tests: the commands get the CPU device count a user gets
  (``--cpu-devices`` default ``auto``), unless a command sets its own.
* Sizes: :data:`OVERRIDES` appends small sizes (steps, rounds, a test subset) to the commands it
  matches, each with its reason; :data:`SKIPPED` lists the commands that need a cluster or
  another shell, with the reason. Every entry must match a command of the tested files (a stale
  entry fails).
* :data:`BACKGROUND`: ``serve`` runs until stopped; it is started in the background, the next
  command runs once it prints its "serving" line, and it gets Ctrl-C (SIGINT) after the block,
  after which it must exit with the status the entry names.
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

ROOT = Path(__file__).resolve().parent.parent
VENV_ENV = "JAXPARADIGM_README_VENV"
TIMEOUT_S = 900  # one command

#: the guides whose commands run after README.md's, in this order (every docs/guides/*.md).
GUIDES = [
    "docs/guides/running.md",
    "docs/guides/searching.md",
    "docs/guides/scaling.md",
    "docs/guides/mesh.md",
    "docs/guides/packages.md",
    "docs/guides/architecture.md",
    "docs/guides/contributing.md",
]
TESTED = ["README.md", *GUIDES]

#: (regex on the command, text appended before any trailing comment, why).
OVERRIDES = [
    (r"^make demo\b", "RUN_ARGS='train.steps=40'", "the demo's 800 steps -> 40"),
    (r"^make test$", "PYTEST_ARGS='tests/test_cli.py -k version'", "the suite runs in CI anyway"),
    (r"jaxparadigm run configs/default\.yaml(?!.*train\.steps=)", "train.steps=40",
     "800 steps -> 40 (a command that sets its steps keeps them)"),
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
    ".venv/bin/python tests/train/live_memory_probe.py --table": (
        "six 8-device runs under the live-buffer sampler (minutes): CI's full run makes the same "
        "runs and asserts their figures (tests/train/test_live_memory.py)"
    ),
    "mkdir -p /tmp/i50_before && git archive d263f10 jaxparadigm configs | tar -x -C "
    "/tmp/i50_before": "the before table's tree, for the command below it only",
    ".venv/bin/python tests/train/live_memory_probe.py --table --tree /tmp/i50_before": (
        "the before table: six 8-device runs of the old code (minutes), a record"
    ),
    "jaxparadigm run configs/charlm_pydoc.yaml name=charlm_k8s train.sharding.mode=fsdp": (
        "Kubernetes Indexed Job: runs in the pods, with their environment"
    ),
}

#: regex -> (the line that says it is ready, the exit status after SIGINT). Started in the
#: background, SIGINT after its block: serve stops with 0; a --num-processes group's launcher
#: stops every process and exits 130.
BACKGROUND = {
    r"jaxparadigm serve\b(?!.*--num-processes)": (r"serving \d+ passages", 0),
    r"jaxparadigm serve\b.*--num-processes": (r"serving \d+ passages", 130),
}


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


def documented_commands(root: Path) -> list[tuple[str, list[list[str]]]]:
    """``(file, blocks)`` for each file of :data:`TESTED` under ``root``, in order."""
    return [(name, readme_commands((root / name).read_text(encoding="utf-8"))) for name in TESTED]


def background_ready(command: str) -> tuple[str, int] | None:
    """The :data:`BACKGROUND` entry (ready line, exit status after SIGINT) matching ``command``."""
    return next((entry for p, entry in BACKGROUND.items() if re.search(p, command)), None)


def stale_entries(files: list[tuple[str, list[list[str]]]]) -> list[str]:
    """The :data:`SKIPPED`, :data:`OVERRIDES` and :data:`BACKGROUND` entries that match no
    documented command."""
    flat = [split_comment(c)[0] for _, blocks in files for block in blocks for c in block]
    stale = [f"SKIPPED {c!r}" for c in SKIPPED if c not in flat]
    stale += [f"OVERRIDES {p!r}" for p, *_ in OVERRIDES if not any(re.search(p, c) for c in flat)]
    stale += [f"BACKGROUND {p!r}" for p in BACKGROUND if not any(re.search(p, c) for c in flat)]
    return stale


def test_readme_parsing_rules():
    """The rules the README test relies on, on a made-up block (no clone needed)."""
    text = "```bash\n# note\nA=1 \\\n  cmd x   # say '#'\n\ncmd 'a # b' y\n```\n"
    assert readme_commands(text) == [["A=1 cmd x # say '#'", "cmd 'a # b' y"]]
    assert split_comment("cmd 'a # b' y # c") == ("cmd 'a # b' y", "# c")
    assert with_overrides("jaxparadigm claims   # ledger") == "jaxparadigm claims --only C2.5 C4.3"
    run = ".venv/bin/jaxparadigm run configs/default.yaml"
    assert with_overrides(run + " name=x") == run + " name=x train.steps=40"
    assert with_overrides(run + " train.steps=80") == run + " train.steps=80"
    assert with_overrides("make test") == "make test PYTEST_ARGS='tests/test_cli.py -k version'"
    assert with_overrides("make test PYTEST_ARGS=a") == "make test PYTEST_ARGS=a"
    assert background_ready("jaxparadigm serve --index i --port 1") == (r"serving \d+ passages", 0)
    assert background_ready("jaxparadigm serve --index i --num-processes 2")[1] == 130
    assert background_ready("jaxparadigm search x") is None


def test_every_guide_is_tested_in_order_and_in_the_site():
    """:data:`GUIDES` names every docs/guides/*.md once, and docs/index.md's toctree lists each."""
    on_disk = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs/guides").glob("*.md"))
    assert sorted(GUIDES) == on_disk and len(set(GUIDES)) == len(GUIDES), (GUIDES, on_disk)
    index = (ROOT / "docs/index.md").read_text(encoding="utf-8")
    toctree = [m.split("\n") for m in re.findall(r"^```\{toctree\}\n(.*?)^```", index, re.S | re.M)]
    entries = [line.strip() for tree in toctree for line in tree if line.strip()]
    missing = [g for g in GUIDES if g.removeprefix("docs/").removesuffix(".md") not in entries]
    assert not missing, f"guides missing from docs/index.md's toctree: {missing}"


def test_the_size_lists_match_documented_commands():
    """The lists' entries each match a command of the working tree's tested files (the clone
    test checks the clone's files again); a guide with commands has them in ```bash blocks."""
    files = documented_commands(ROOT)
    assert not stale_entries(files), stale_entries(files)
    with_commands = {name for name, blocks in files if any(blocks)}
    assert {"README.md", "docs/guides/searching.md", "docs/guides/scaling.md"} <= with_commands


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_twice_exits_0_both_times(tmp_path, capsys, monkeypatch):
    """The README's first command is rerunnable: the command line ``make demo`` runs (``make -n``
    prints it), on a tiny size, twice: both exit 0, the second prints that the run is complete
    and its report's path (it was refused as "finished", exit 2, under ``resume: false``)."""
    tiny = f"out_dir={tmp_path} train.steps=4 train.checkpoint.every=2 train.eval_every=2 "
    tiny += "data.n_samples=256 train.plots=false"
    printed = subprocess.run(
        [
            "make",
            "-n",
            "--no-print-directory",
            "-o",
            ".venv/.installed",
            "demo",
            f"RUN_ARGS={tiny}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(printed) == 1 and printed[0].startswith(".venv/bin/jaxparadigm run "), printed
    from jaxparadigm import cli

    monkeypatch.chdir(ROOT)
    argv = printed[0].split()[1:]
    assert cli.main([*argv, "--no-progress"]) == 0
    report = tmp_path / "default" / "report.md"
    first = report.read_bytes()
    capsys.readouterr()
    assert cli.main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("run 'default' is already complete") and f"report: {report}" in out
    assert report.read_bytes() == first


def github_anchor(heading: str) -> str:
    """GitHub's (and MyST's) anchor of a Markdown heading: lower case, punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_readme_links_point_to_files_and_headings():
    """Every relative link of README.md names a file or folder of the repository, and an anchor
    names a heading of its Markdown file."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "README.md has no relative links"
    broken = []
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        if not target.exists():
            broken.append(link)
        elif anchor:
            headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
            if anchor not in {github_anchor(h) for h in headings}:
                broken.append(link)
    assert not broken, f"README.md links to nothing: {broken}"


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
    env.pop("JAXPARADIGM_REQUIRE_ORACLES", None)  # the documented commands are not oracle tests
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


def _stop(proc: subprocess.Popen, status: int, where: str) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{where}: a background command did not stop on SIGINT:\n{out[-3000:]}")
    assert proc.returncode == status, (
        f"{where}: exit {proc.returncode} after SIGINT, expected {status}\n{out[-3000:]}"
    )
    return out


def _start(command: str, ready: str, clone: Path, env: dict, where: str) -> subprocess.Popen:
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
    pytest.fail(f"{where}: {command!r} never printed {ready!r}:\n{''.join(seen)[-3000:]}")


def _run_block(block: list[str], clone: Path, env: dict, where: str) -> list[str]:
    """Run one block's commands in order (background ones until the block ends); the commands run."""
    ran: list[str] = []
    background = []
    try:
        for command in block:
            if split_comment(command)[0] in SKIPPED:
                continue
            cmd = _shared_venv_safe(with_overrides(command))
            entry = background_ready(cmd)
            if entry is not None:
                background.append((_start(cmd, entry[0], clone, env, where), entry[1]))
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
                f"{where}: command failed (exit {proc.returncode}, {took:.0f} s): {cmd}\n"
                f"{proc.stdout[-4000:]}"
            )
            ran.append(cmd)
    finally:
        for proc, status in background:
            _stop(proc, status, where)
    return ran


@pytest.mark.slow
@pytest.mark.readme
def test_every_documented_command_runs_in_a_fresh_clone(clone):
    files = documented_commands(clone)
    assert not stale_entries(files), f"stale entries: {stale_entries(files)}"
    env = _run_env(clone)
    ran = {}
    for name, blocks in files:
        ran[name] = [c for block in blocks for c in _run_block(block, clone, env, name)]
    assert ran["README.md"], "no README command ran"
    empty = [name for name, blocks in files if any(blocks) and not ran[name]]
    assert not empty, f"files whose commands were all skipped: {empty}"
