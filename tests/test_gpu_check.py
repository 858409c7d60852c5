"""benchmarks/gpu_check.{sh,py} (issue 26, part 4) on a CPU-only machine.

The GPU figures themselves need a GPU; here: the whole measurement script at tiny sizes on the CPU
(every section prints finite figures), the shell script's "no GPU" line and exit status, its GPU
branch driven by a stand-in python that reports a GPU backend, and the declared ``cuda`` extra.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
NUMBER = r"[-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?"


def _env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop("XLA_FLAGS", None)  # conftest's forced host devices are not the script's business
    return env


def _numbers(line: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(NUMBER, line)]


def _leaves(tree):
    """Every int/float in a JSON tree (bools excluded)."""
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _leaves(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _leaves(v)
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool):
        yield float(tree)


def test_tiny_cpu_run_prints_every_section_with_finite_figures(tmp_path):
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py", "--platform", "cpu", "--tiny"]
        + ["--json", str(out)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    for section in ("limits", "charlm", "adam", "search", "same", "mesh"):
        assert f"gpu_check: section {section} done" in proc.stdout, proc.stdout
    limits = next(x for x in lines if x.startswith("limits: read bandwidth") and "TFLOP/s" in x)
    mfu = next(x for x in lines if x.startswith("charlm: step"))
    adam = [x for x in lines if x.startswith("adam: ours adam")]
    table = [x for x in lines if x.startswith("| ours ")]
    same = [x for x in lines if x.startswith("same: ")]
    assert (
        "MFU" in mfu and "tokens/s" in mfu and len(adam) == 1 and "of the read bandwidth" in adam[0]
    )
    assert [r.split("|")[1].strip() for r in table] == [
        "ours float32",
        "ours bfloat16",
        "ours int8",
    ]
    for line in [limits, mfu, *adam, *table, *same]:
        values = _numbers(line)
        assert values and all(math.isfinite(v) for v in values), line
        assert not re.search(r"\b(nan|inf)\b", line, re.I), line
    # The same program on the same CPU device is deterministic: identical results, zero difference.
    assert len(same) == 8 and all("max abs diff 0, max rel diff 0" in x for x in same), same
    assert sum("top-10 ids identical: yes" in x for x in same) == 4
    mesh = next(x for x in lines if x.startswith("mesh: fsdp 1 x tensor 1 on 1 x cpu"))
    assert float(re.search(r"max rel diff (\S+);", mesh)[1]) < 1e-5, mesh
    figures = json.loads(out.read_text())
    assert figures["mesh"]["state_share_busiest"] == 1.0  # one device holds the whole state
    assert len(figures["mesh"]["losses"]) == 3
    numbers = list(_leaves(figures))
    assert len(numbers) > 40 and all(math.isfinite(v) for v in numbers)
    assert 0 < figures["charlm"]["mfu"] and figures["limits"]["read_bytes_per_s"] > 0
    assert 0 < figures["adam"]["ours adam"]["fraction_of_read_bandwidth"]
    assert set(figures["search"]["rows"]) >= {"ours float32", "ours bfloat16", "ours int8"}


def test_shell_script_without_a_gpu_prints_one_line_and_exits_0():
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--no-install"],
        env=_env(PYTHON=sys.executable, JAX_PLATFORMS="cpu"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "gpu_check: no GPU (jax backend: cpu) -- nothing measured\n"


def test_shell_script_refuses_unknown_arguments_and_a_python_without_jax(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT), "--fast"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown argument '--fast'" in proc.stderr
    no_jax = tmp_path / "python"
    no_jax.write_text("#!/bin/sh\necho 'ModuleNotFoundError: no jax' >&2\nexit 1\n")
    no_jax.chmod(0o755)
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--no-install"],
        env=_env(PYTHON=str(no_jax)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "cannot import jax" in proc.stderr, proc.stderr


def test_shell_script_gpu_branch_runs_tests_then_measurements(tmp_path):
    """A stand-in python answers ``gpu`` to the backend probe and runs everything else with the
    real interpreter: the test subset is cut by its budget (status 1), the measurements run."""
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$2" in *default_backend*) echo gpu; exit 0;; esac\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    fake.chmod(0o755)
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--no-install", "--"]
        + ["--platform", "cpu", "--tiny", "--sections", "limits"],
        env=_env(PYTHON=str(fake), GPU_CHECK_TEST_BUDGET_S="2", GPU_CHECK_BUDGET_S="200"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "gpu_check: test subset cut at 2 s" in out, out
    assert "limits: read bandwidth" in out and "gpu_check: section limits done" in out, out
    assert re.search(r"gpu_check: done in \d+ s, exit status 1\n$", out), out


def test_the_cuda_extra_is_jax_with_its_cuda_plugin():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["cuda"] == ["jax[cuda13]"]
    assert "cuda" in SCRIPT.read_text().split('pip install -q -e ".[')[1].split("]")[0]


@pytest.mark.parametrize("flag", ["--sections", "--charlm"])
def test_measurement_script_rejects_bad_options(flag):
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py", flag, "nonsense"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and flag in proc.stderr, proc.stderr
