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


def test_claims_json_carries_platform_and_takes_config_overrides(tmp_path, capsys):
    import json

    assert cli.main(["claims", "claims.c5_2.p99_ms=500", "--only", "C2.4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["claim_id"] == "C2.4" and rows[0]["evidence"]["platform"]["backend"] == "cpu"
    path = tmp_path / "claims.yaml"
    path.write_text("name: c\nclaims:\n  c5_2:\n    qps: fast\n")
    assert cli.main(["claims", "--config", str(path), "--only", "C2.4"]) == 2
    assert "claims.c5_2.qps" in capsys.readouterr().err
    assert cli.main(["claims", "claims.c5_2.nope=1", "--only", "C2.4"]) == 2
    assert "claims.c5_2.nope" in capsys.readouterr().err
