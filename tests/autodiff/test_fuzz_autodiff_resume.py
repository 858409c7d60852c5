"""benchmarks/fuzz_autodiff.py's ``--resume`` and ``--summarize`` on a log (issue 23): a run cut
short goes on at the program indexes not yet logged, and the totals count each index once."""

import json

import pytest

from tests.benchmark_module import load_benchmark


def _module():
    module = load_benchmark("fuzz_autodiff")
    return module


def _line(index, classes):
    return {
        "index": index,
        "seed": 1000 + index,
        "cpu_s": 0.5,
        "classes": classes,
        "not_equal": [["oracle_raised", "jvp", True, "jax: ValueError"]]
        if "oracle_raised" in classes
        else [],
        "program": f"Program({index})",
    }


def _write(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_resume_runs_only_the_indexes_not_logged(tmp_path, capsys, monkeypatch):
    fuzz = _module()
    log = tmp_path / "run.jsonl"
    _write(log, [_line(i, {"equal": 21}) for i in (5, 6, 8)])
    assert fuzz._logged_indexes(log) == {5, 6, 8}
    assert fuzz._logged_indexes(tmp_path / "missing.jsonl") == set()
    ran = []
    monkeypatch.setattr(fuzz, "_worker", lambda job: (ran.append(job[0]), (0, {}, {}, {}))[1])
    fuzz.main(["--programs", "5", "--seed", "5", "--resume", "--log", str(log)])
    assert ran == [[7, 9]]  # 5..9 requested, 5, 6, 8 logged
    assert "--resume: 3 of 5 programs already in" in capsys.readouterr().out
    ran.clear()
    fuzz.main(["--programs", "5", "--seed", "5", "--workers", "1", "--log", str(log)])
    assert ran == [[5, 6, 7, 8, 9]]  # without --resume every index runs again


def test_workers_split_the_pending_indexes(tmp_path, monkeypatch):
    fuzz = _module()
    log = tmp_path / "run.jsonl"
    _write(log, [_line(1, {"equal": 21})])
    jobs = []

    class Pool:  # the spawn pool, in process: records each worker's indexes
        def __init__(self, n):
            self.n = n

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, fn, js):
            jobs.extend(j[0] for j in js)
            return [(0, {}, {}, {}) for _ in js]

    monkeypatch.setattr(fuzz.mp, "get_context", lambda kind: type("C", (), {"Pool": Pool}))
    fuzz.main(["--programs", "6", "--workers", "2", "--resume", "--log", str(log)])
    assert jobs == [[0, 3, 5], [2, 4]]


def test_resume_needs_a_log():
    with pytest.raises(SystemExit, match="--resume needs --log"):
        _module().main(["--programs", "2", "--resume"])


def test_summarize_counts_each_index_once(tmp_path, capsys):
    log = tmp_path / "run.jsonl"
    lines = [_line(3, {"equal": 20, "oracle_raised": 1}), _line(4, {"equal": 21})]
    _write(log, [*lines, lines[0]])  # index 3 logged twice (a rerun)
    record = _module().main(["--summarize", str(log)])
    assert record["programs"] == 2 and record["indexes"] == [3, 4]
    assert record["classes"] == {"equal": 41, "oracle_raised": 1}
    assert record["comparisons"] == 42 and record["cpu_seconds"] == 1.0
    assert "1  oracle_raised | jvp/jit | jax: ValueError" in capsys.readouterr().out
