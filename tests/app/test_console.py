"""The console script's first lines (jaxparadigm/console.py): a Ctrl-C while the command's modules
load is one stderr line and exit 130, also with SIGINT inherited ignored (a background start).

What each test caught in the code before: the console script was ``jaxparadigm.cli:main``, whose
module loads NumPy and the argument types before ``main``'s first line, so an interrupt there was
Python's ``KeyboardInterrupt`` traceback (exit 1), or nothing at all in the background.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A child whose SIGINT arrives while ``jaxparadigm.cli`` is being imported (a real signal, sent
#: by a finder asked for that module), optionally with SIGINT ignored as a background shell
#: leaves it, then the console's ``main``.
CHILD = """
import os, signal, sys
if sys.argv[1] == "background":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "jaxparadigm.cli":
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv[1:] = sys.argv[2:]
from jaxparadigm.console import main
raise SystemExit(main())
"""


@pytest.mark.parametrize(
    ("start", "argv", "line"),
    [
        ("foreground", ["--version"], "jaxparadigm: interrupted"),
        ("background", ["--version"], "jaxparadigm: interrupted"),
        ("foreground", ["run", "configs/default.yaml"], "jaxparadigm run: interrupted"),
        ("background", ["--no-progress", "search", "x"], "jaxparadigm search: interrupted"),
    ],
)
def test_ctrl_c_while_the_command_loads_is_one_line_and_130(start, argv, line):
    """The line ``main`` prints for the same interrupt: the subcommand named when one is given."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("JAXPARADIGM_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, start, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", line + "\n")


def test_the_subcommands_are_the_clis_and_lines_name_them():
    from jaxparadigm import cli
    from jaxparadigm.app.command_words import SUBCOMMANDS, command_named, line_start

    assert SUBCOMMANDS == tuple(cli.COMMANDS)
    assert command_named(["--x", "configs/run.yaml", "search", "run"]) == "search"
    assert command_named(["--version"]) is None and command_named([]) is None
    assert (line_start("index"), line_start(None)) == ("jaxparadigm index", "jaxparadigm")


def test_without_an_interrupt_the_console_runs_the_cli():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run_main = "import sys; from jaxparadigm.console import main; sys.exit(main())"
    for argv in (["-m", "jaxparadigm", "--version"], ["-c", run_main, "--version"]):
        proc = subprocess.run(
            [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=60
        )
        assert (proc.returncode, proc.stderr) == (0, ""), proc
        assert proc.stdout.startswith("jaxparadigm "), proc


def test_the_console_script_and_python_m_go_through_the_console():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '[project.scripts]\njaxparadigm = "jaxparadigm.console:main"\n\n' in pyproject
    assert "from jaxparadigm.console import main" in (ROOT / "jaxparadigm/__main__.py").read_text()


def test_a_bug_while_loading_keeps_its_traceback(monkeypatch):
    """Only an interrupt is turned into the one line: an error of the package's own import is
    raised as it is."""
    from jaxparadigm import console

    def broken(name):
        raise ImportError(f"{name}: broken on purpose")

    monkeypatch.setattr(console.importlib, "import_module", broken)
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(ImportError, match="broken on purpose"):
            console.main()
    finally:
        signal.signal(signal.SIGINT, before)
