"""Issue 25, the user's path: finished runs, logs without carriage returns, progress off switches,
benchmarks that skip a missing oracle, help texts, exports and wording a user reads."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxparadigm import cli
from jaxparadigm.common.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
SMALL = [
    "train.steps=6",
    "train.eval_every=3",
    "train.log_every=3",
    "train.checkpoint.every=3",
    "train.checkpoint.resume=true",
    "train.plots=false",
    "data.n_samples=256",
]


def _args(tmp_path) -> list[str]:
    return ["run", str(ROOT / "configs" / "default.yaml"), *SMALL, f"out_dir={tmp_path}", "name=u"]


def test_a_logged_run_has_no_carriage_return_and_a_finished_run_does_nothing(
    tmp_path, capfd, monkeypatch
):
    """A run whose output is not a terminal writes progress lines, no '\\r'; running the finished
    run again says so in one line, exit 0, report and metrics untouched; raising train.steps
    trains further (C5.1)."""
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    args = _args(tmp_path)
    assert cli.main(args) == 0
    first = capfd.readouterr()
    assert "\r" not in first.err + first.out
    assert "u: step 1/6 (compiled and ran in" in first.err and "u: step 6/6" in first.err
    run = tmp_path / "u"
    before = {p: (run / p).read_bytes() for p in ("report.md", "metrics.jsonl")}
    assert cli.main(args) == 0
    out = capfd.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "already complete" in out[0] and "train.steps" in out[0], out
    assert {p: (run / p).read_bytes() for p in before} == before
    assert cli.main([*args, "train.steps=9", "--no-progress"]) == 0  # trains further, quietly:
    notice = f"u: resumed from checkpoint step 6 of 9 ({run / 'checkpoints'})"  # only this line
    assert capfd.readouterr().err.splitlines() == [notice]
    assert "steps run: 9 of 9 (resumed from checkpoint step 6)" in (run / "report.md").read_text()


@pytest.mark.slow
def test_run_redirected_to_a_file_writes_no_carriage_return(tmp_path):
    """The issue's check as a user types it: `run configs/default.yaml > out.log 2>&1`."""
    env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"}
    env["PYTHONPATH"] = str(ROOT)
    with (tmp_path / "out.log").open("wb") as log:
        subprocess.run(
            [sys.executable, "-m", "jaxparadigm", *_args(tmp_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            check=True,
            timeout=300,
        )
    text = (tmp_path / "out.log").read_bytes()
    assert b"\r" not in text and b"u: step 6/6" in text and b"report: " in text


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _steps(stream, lines: int = 10) -> Progress:
    """Training's progress of steps 1..8 (as ``train`` builds it)."""
    count = "step {done}/{total}"
    return Progress(8, "demo", count=count, stream=stream, lines=lines, compiles=True)


def test_progress_lines_off_a_tty_and_the_switches_that_silence_them(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    stream = _Stream(tty=False)
    bar = _steps(stream, lines=4)
    for _ in range(1, 9):
        bar.update(1, {"loss": "0.5"})
    bar.close()
    lines = stream.getvalue().splitlines()
    assert [ln.split(",")[0].split(" (")[0] for ln in lines] == [
        "demo: step 1/8",
        "demo: step 2/8",
        "demo: step 4/8",
        "demo: step 6/8",
        "demo: step 8/8",
    ]
    assert "compiled and ran in" in lines[0] and "ETA" not in lines[0]  # no ETA from the compile
    assert "ETA" in lines[-1] and "loss 0.5" in lines[-1] and "\r" not in stream.getvalue()
    for env in ("1", "True"):
        monkeypatch.setenv("TQDM_DISABLE", env)
        quiet = _Stream(tty=False)
        _steps(quiet).update(1)
        assert quiet.getvalue() == ""
    monkeypatch.setenv("TQDM_DISABLE", "0")  # tqdm's convention: "0" leaves it on
    tty = _Stream(tty=True)
    bar = _steps(tty)
    bar.update(1)
    assert bar._bar is not None and bar._bar.n == 1  # the bar starts after the compiling step
    bar.close()


def test_the_launcher_drops_gloo_chatter_and_passes_partial_lines():
    from jaxparadigm.train.launch import _relay

    r, w = os.pipe()
    os.write(w, b"start\n[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of ")
    os.write(w, b"connected peer ranks is : 1\nmp: step 1/6\n\rbar 10%")
    os.close(w)
    out = io.BytesIO()
    _relay(os.fdopen(r, "rb"), out)
    assert out.getvalue() == b"start\nmp: step 1/6\n\rbar 10%"


def test_the_launcher_drops_gloo_chatter_that_two_threads_interleaved():
    """CI once saw " peer ranks. Expected ..." before search --json's document: two gloo threads
    wrote their lines in pieces. Both pieces go, wherever a chunk ends; other text stays."""
    from jaxparadigm.train.launch import _relay

    piece = b"[Gloo] Rank 0 is connected to 1"
    rest = b" peer ranks. Expected number of connected peer ranks is : 1"
    stream = b"a\n" + piece + piece + rest + b"\n" + rest + b"\nkept [Gloo] Rank 0 is\n\rbar 5%"
    for cut in range(1, len(stream)):
        r, w = os.pipe()
        os.write(w, stream[:cut])
        os.write(w, stream[cut:])
        os.close(w)
        out = io.BytesIO()
        _relay(os.fdopen(r, "rb"), out)
        assert out.getvalue() == b"a\nkept [Gloo] Rank 0 is\n\rbar 5%", cut
    r, w = os.pipe()
    os.write(w, piece + rest + b"\n")
    os.close(w)
    out = io.BytesIO()
    _relay(os.fdopen(r, "rb"), out, chatter=False)  # a worker's stdout: Python's writes only
    assert out.getvalue() == piece + rest + b"\n"


def test_a_launched_worker_prints_native_stdout_on_stderr(tmp_path):
    """keep_stdout_for_python: what C writes to descriptor 1 goes to stderr; print() to stdout."""
    script = (
        "import ctypes, os, sys\n"
        "from jaxparadigm.common.native_stdout import keep_stdout_for_python\n"
        "print('before', flush=True)\n"
        "assert keep_stdout_for_python()\n"
        "os.write(1, b'native\\n')\n"
        "print('{\"json\": 1}')\n"
    )
    env = {**os.environ, "JAXPARADIGM_NATIVE_STDOUT": "stderr"}
    r = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == 'before\n{"json": 1}\n'
    assert r.stderr == "native\n"
    env.pop("JAXPARADIGM_NATIVE_STDOUT")
    r = subprocess.run(
        [sys.executable, "-c", script.replace("assert keep", "assert not keep")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.stdout == 'before\nnative\n{"json": 1}\n'


def _optim_bench():
    import runpy

    return runpy.run_path(str(ROOT / "benchmarks" / "optim_bench.py"), run_name="bench")


def test_bench_optim_reports_a_missing_torch_in_one_line(monkeypatch, capsys):
    bench = _optim_bench()
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    monkeypatch.delenv("JAXPARADIGM_NO_TORCH", raising=False)
    assert bench["_torch_available"]() is False
    assert capsys.readouterr().out.startswith("torch: not installed")
    monkeypatch.setenv("JAXPARADIGM_NO_TORCH", "1")
    monkeypatch.delitem(sys.modules, "torch")
    assert bench["_torch_available"]() is False
    assert "JAXPARADIGM_NO_TORCH" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_optim_without_torch_skips_it_in_one_line(monkeypatch, capsys):
    """`jaxparadigm bench optim` crashed with ModuleNotFoundError after measuring (issue 25)."""
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    monkeypatch.delenv("JAXPARADIGM_NO_TORCH", raising=False)
    result = _optim_bench()["main"](["--params", "64", "--leaves", "2", "--reps", "1"])
    out = capsys.readouterr().out
    assert "torch: not installed" in out and "jaxparadigm bench optim --full" in out
    assert result["torch_threads"] is None


def test_help_texts_are_for_users(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    for command in ("run CONFIG", "claims", "search", "index build", "serve --index", "bench"):
        assert command in top
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    bench = capsys.readouterr().out
    names = sorted(p.name[: -len("_bench.py")] for p in (ROOT / "benchmarks").glob("*_bench.py"))
    assert names and all(f"\n  {n} " in bench for n in names), bench
    with pytest.raises(SystemExit):
        cli.main(["search", "--help"])
    search = capsys.readouterr().out
    assert "what to look for" in search and "(default: 5)" in search
    assert "rescored in float32) (default: float32)" in " ".join(search.split())


def test_bench_finds_this_checkouts_scripts(capsys):
    """`bench` looks in <repo>/benchmarks (it once looked in jaxparadigm/benchmarks after the CLI
    moved to jaxparadigm/app/, and refused every bench of a checkout)."""
    from jaxparadigm.app import cli as app_cli

    assert app_cli.BENCHMARKS_DIR == ROOT / "benchmarks"
    assert cli.main(["bench", "no_such_thing"]) == 2
    err = capsys.readouterr().err
    assert "expected one of" in err and "optim" in err and "source checkout, not" not in err


def test_bench_outside_a_source_checkout_says_so(monkeypatch, tmp_path, capsys):
    from jaxparadigm.app import cli as app_cli

    monkeypatch.setattr(app_cli, "BENCHMARKS_DIR", tmp_path / "site-packages" / "benchmarks")
    assert cli.main(["bench", "optim"]) == 2
    err = capsys.readouterr().err
    assert "source checkout" in err and "Traceback" not in err


def test_exports_the_readme_names():
    import jaxparadigm.retrieval as retrieval
    from jaxparadigm.train import train
    from jaxparadigm.train.train_loop import train as loop_train

    assert train is loop_train
    for name in ("IndexSearcher", "VectorSearcher", "build_index", "add_to_index"):
        assert name in retrieval.__all__ and getattr(retrieval, name).__doc__


def test_override_problems_are_named_as_overrides(tmp_path):
    from jaxparadigm.config import load_config
    from jaxparadigm.errors import ConfigError

    path = tmp_path / "c.yaml"
    path.write_text("name: x\n")
    with pytest.raises(ConfigError, match=r"^2 problems in the overrides \(train.stepz=3"):
        load_config(path, ["train.stepz=3", "optim.learning_rate=-1"])
    path.write_text("name: x\ntrain: {stepz: 3}\n")
    with pytest.raises(ConfigError, match="problems in config file .* and its overrides"):
        load_config(path, ["optim.learning_rate=-1"])
    path.write_text("name: x\ntrain: {stepz: 3, seed: -1}\n")
    with pytest.raises(ConfigError, match=r"^2 problems in config file '[^']*'(?! and)"):
        load_config(path, ["optim.learning_rate=0.1"])


def test_one_claim_is_singular():
    from jaxparadigm.claims.report import format_table
    from jaxparadigm.claims.verdict import Verdict

    table = format_table([Verdict("C2.5", "fails", "s", {}, {})])
    assert table.splitlines()[-1].startswith("1 claim: 0 hold, 1 fail")


def test_an_mlp_report_shows_only_the_config_it_used(tmp_path):
    from jaxparadigm.app.train_task import used_config
    from jaxparadigm.config import load_config

    mlp = used_config(load_config(ROOT / "configs" / "default.yaml"))
    assert "vocab_size" not in mlp["model"] and "seq_len" not in mlp["data"]
    assert not {"retrieval", "claims", "mixed_precision", "overflow"} & set(mlp)
    assert "faults" not in mlp["train"] and "distributed" not in mlp["train"]
    lm = used_config(load_config(ROOT / "configs" / "charlm_pydoc.yaml"))
    assert "vocab_size" in lm["model"] and "hidden" not in lm["model"]


def test_the_charlm_report_says_a_topic_split_drifts_by_design():
    from jaxparadigm.app.train_task import _split_note
    from jaxparadigm.config import load_config
    from jaxparadigm.train.drift import drift_report

    rng = np.random.default_rng(0)
    ref = rng.normal(size=(500, 2))
    drifted, same = drift_report(ref, ref + [3.0, 0.0]), drift_report(ref, ref)
    lm = load_config(ROOT / "configs" / "charlm_pydoc.yaml")
    assert drifted.drifted and "by design" in " ".join(_split_note(lm, drifted))
    assert _split_note(lm, same) == []  # nothing flagged: nothing to explain
    mlp = load_config(ROOT / "configs" / "default.yaml")
    assert _split_note(mlp, drifted) == []  # a random split has no such excuse
