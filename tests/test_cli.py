"""CLI: version, one-line config errors with exit status 2."""

import subprocess
import sys

from jaxparadigm import __version__, cli
from jaxparadigm.app.tasks import TASKS


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


# --- issue 10: exit 2 with one stderr line naming the key or file; exit 3 on give-up; bugs keep
# their traceback --------------------------------------------------------------------------------

import pytest  # noqa: E402
import yaml  # noqa: E402

from jaxparadigm.errors import TrainingAborted  # noqa: E402
from tests.train.conftest import tiny_regression_raw  # noqa: E402


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["train.steps=-5"], "'train.steps'"),
        (["train.steps=0"], "'train.steps'"),
        (["train.steps=100000000000000000000000"], "'train.steps'"),
        (["train.eval_every=0"], "'train.eval_every'"),
        (["train.log_every=0"], "'train.log_every'"),
        (["train.checkpoint.every=-1"], "'train.checkpoint.every'"),
        (["train.guard.lr_decay_on_rollback=0"], "'train.guard.lr_decay_on_rollback'"),
        (["name=../../escape"], "'name'"),
        (["mixed_precision.nu_dtypes=[]"], "'mixed_precision.nu_dtypes'"),
        (["data.batch_size=100000"], "'data.batch_size'"),
        (["data.val_fraction=1.5"], "'data.val_fraction'"),
    ],
)
def test_bad_config_values_exit_2_in_one_line(tmp_path, capsys, overrides, needle):
    path = tmp_path / "c.yaml"
    path.write_text(f"name: x\nout_dir: {tmp_path}\n")
    assert cli.main(["run", str(path), *overrides]) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("jaxparadigm run: error: config key " + needle)
    assert not (tmp_path.parent / "escape").exists()


def test_bad_files_exit_2_naming_the_file(tmp_path, capsys):
    binary = tmp_path / "b.yaml"
    binary.write_bytes(bytes(range(256)))
    (tmp_path / "f").write_text("")
    dup = tmp_path / "d.yaml"
    dup.write_text("name: x\nname: y\n")
    for args, needle in [
        ([str(tmp_path)], f"config file '{tmp_path}': is a directory"),
        ([str(binary)], f"config file '{binary}': not a UTF-8 text file"),
        ([str(dup)], "duplicate key 'name' at lines 1 and 2"),
        ([str(dup.with_name("absent.yaml"))], "no such file"),
    ]:
        assert cli.main(["run", *args]) == 2
        lines = _err_lines(capsys)
        assert len(lines) == 1 and needle in lines[0], lines
    ok = tmp_path / "ok.yaml"
    ok.write_text("name: x\n")
    assert cli.main(["run", str(ok), f"out_dir={tmp_path / 'f'}"]) == 2
    assert "config key 'out_dir'" in _err_lines(capsys)[0]


def test_several_problems_one_line_each(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("optim: {learning_rat: 0.1}\ntrain: {steps: -5}\n")
    assert cli.main(["run", str(path)]) == 2
    lines = _err_lines(capsys)
    assert lines[0] == f"jaxparadigm run: error: 3 problems in config file '{path}':"
    assert "'optim.learning_rat': unknown key; did you mean 'optim.learning_rate'?" in lines[1]
    assert "'name': required key is missing" in lines[2] and "'train.steps'" in lines[3]


def test_a_run_that_gives_up_exits_3_in_one_line(tmp_path, capsys):
    path = tmp_path / "nan.yaml"
    raw = tiny_regression_raw(tmp_path, "nan", steps=20, faults={"nan_batch": list(range(20))})
    path.write_text(yaml.safe_dump(raw))
    assert cli.main(["run", str(path), "train.guard.max_rollbacks=1"]) == 3
    lines = [ln for ln in _err_lines(capsys) if ln.startswith("jaxparadigm")]
    assert lines == [
        "jaxparadigm run: error: training aborted at step 5 of 20: a rollback was needed after 1 "
        "rollback(s) (train.guard.max_rollbacks=1); 6 step(s) skipped, 1 rollback(s), 0 accepted "
        "update(s) in the state, lr scale 0.5; no finite loss in this call. No checkpoint of this "
        "state was saved"
    ]
    assert not (tmp_path / "nan" / "report.md").exists()


def test_a_bug_keeps_its_traceback(tmp_path, monkeypatch):
    path = tmp_path / "ok.yaml"
    path.write_text(f"name: x\nout_dir: {tmp_path}\n")

    def buggy(cfg):
        return {}["no such key"]  # a programming error, not bad input

    monkeypatch.setitem(TASKS, "train", lambda cfg: globals()["_BUGGY"](cfg))
    monkeypatch.setitem(globals(), "_BUGGY", buggy)
    with pytest.raises(KeyError):
        cli.main(["run", str(path)])
    for exc in (ValueError("internal"), TypeError("internal"), FileNotFoundError("x")):
        monkeypatch.setitem(globals(), "_BUGGY", lambda cfg, exc=exc: (_ for _ in ()).throw(exc))
        with pytest.raises(type(exc)):
            cli.main(["run", str(path)])
    monkeypatch.setitem(
        globals(), "_BUGGY", lambda cfg: (_ for _ in ()).throw(TrainingAborted("gave up"))
    )
    assert cli.main(["run", str(path)]) == 3


def test_claims_input_errors_exit_2(tmp_path, capsys):
    assert cli.main(["claims", "--only", "C9.9"]) == 2
    assert "claim id 'C9.9': unknown" in _err_lines(capsys)[0]
    assert cli.main(["claims", "--only", "C2.1", "--update-readme", str(tmp_path / "no")]) == 2
    assert "--update-readme" in _err_lines(capsys)[0]
    (tmp_path / "f").write_text("")
    assert cli.main(["claims", "--only", "C2.1", "--report", str(tmp_path / "f")]) == 2
    assert "is a file" in _err_lines(capsys)[0]


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


def test_warnings_are_one_line_each(tmp_path, capsys):
    import shutil

    path = tmp_path / "w.yaml"
    path.write_text(
        yaml.safe_dump(tiny_regression_raw(tmp_path, "w", steps=4, checkpoint={"every": 2}))
    )
    assert cli.main(["run", str(path)]) == 0
    shutil.rmtree(tmp_path / "w" / "checkpoints" / "4" / "meta")  # a deletion cut short
    capsys.readouterr()
    assert cli.main(["run", str(path), "train.steps=6"]) == 0
    warned = [ln for ln in _err_lines(capsys) if ln.startswith("jaxparadigm run: warning:")]
    assert warned == [
        f"jaxparadigm run: warning: checkpoint step 4 in {tmp_path / 'w' / 'checkpoints'} is "
        "incomplete (missing meta/metadata): skipped"
    ]
