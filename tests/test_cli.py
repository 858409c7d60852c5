"""CLI: version, one-line config errors with exit status 2."""

import subprocess
import sys

from jaxparadigm import __version__, cli


def test_version(capsys):
    try:
        cli.main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_config_error_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\noptim:\n  schedule:\n    warmup_steps: ten\n")
    assert cli.main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "optim.schedule.warmup_steps" in err
    assert "Traceback" not in err


def test_bad_override_exit_2(tmp_path, capsys):
    path = tmp_path / "ok.yaml"
    path.write_text("name: x\n")
    assert cli.main(["run", str(path), "optim.nope=1"]) == 2
    assert "optim.nope" in capsys.readouterr().err


def test_unknown_bench_exit_2(capsys):
    assert cli.main(["bench", "no_such_thing"]) == 2
    assert "no_such_thing" in capsys.readouterr().err


def test_python_dash_m():
    out = subprocess.run(
        [sys.executable, "-m", "jaxparadigm", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert __version__ in out.stdout
