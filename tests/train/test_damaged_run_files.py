"""A run folder's own JSON files with numbers and nesting that json.loads cannot build (issue 34).

A 5,000-digit integer (past Python's 4,300-digit int-string limit) raised a raw ``ValueError`` from
``read_metrics`` and from the "already complete?" check; nesting past the recursion limit raised a
raw ``RecursionError``; a step folder named with a Unicode digit (``²``) raised ``ValueError`` from
``int()``. Each is now a damaged line (skipped with a warning, or one error naming file and line),
or "not finished" (the loop's restore then names the damage).
"""

import json

import pytest

from jaxparadigm.config import config_from_dict
from jaxparadigm.train.checkpoint import _REQUIRED
from jaxparadigm.train.checkpoint_signature import _config_json, signed_config
from jaxparadigm.train.completion import finished_run
from jaxparadigm.train.metrics import read_metrics

LONG = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("bad", [f'{{"step": {LONG}}}', DEEP], ids=["long_int", "deep"])
def test_a_metrics_line_json_cannot_build_is_a_damaged_line(tmp_path, bad):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n' + bad + '\n{"step": 2}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"metrics\.jsonl' line 2: not a JSON object record"):
        read_metrics(path)
    with pytest.warns(RuntimeWarning, match="line 2"):
        assert read_metrics(path, damaged="skip") == [{"step": 1}, {"step": 2}]


CFG = config_from_dict({"name": "done"})


def _finished(tmp_path, meta_text, steps=5):
    run = tmp_path / "run"
    step_dir = run / "checkpoints" / str(steps)
    for f in _REQUIRED:
        (step_dir / f).parent.mkdir(parents=True, exist_ok=True)
        (step_dir / f).write_text("x")
    (step_dir / "meta" / "metadata").write_text(meta_text, encoding="utf-8")
    (run / "report.md").write_text("# report\n")
    return run


def test_a_finished_run_is_recognised_and_its_signed_config_is_compared(tmp_path):
    good = json.dumps({"config": json.loads(_config_json(signed_config(CFG)))})
    run = _finished(tmp_path, good)
    assert "already complete" in finished_run(run, "done", 5, signed_config(CFG))
    assert finished_run(run, "done", 6, signed_config(CFG)) is None  # more steps to train
    other = config_from_dict({"name": "done", "optim": {"learning_rate": 0.5}})
    assert finished_run(run, "done", 5, signed_config(other)) is None


@pytest.mark.parametrize(
    "meta", [f'{{"config": {LONG}}}', DEEP, "\udcff"], ids=["long_int", "deep", "bad_utf8"]
)
def test_metadata_json_cannot_build_means_not_finished(tmp_path, meta):
    run = _finished(tmp_path, "{}")
    path = run / "checkpoints" / "5" / "meta" / "metadata"
    path.write_bytes(meta.encode("utf-8", "surrogateescape"))
    assert finished_run(run, "done", 5, signed_config(CFG)) is None


def test_a_step_folder_named_with_a_unicode_digit_is_not_a_step(tmp_path):
    good = json.dumps({"config": json.loads(_config_json(signed_config(CFG)))})
    run = _finished(tmp_path, good)
    (run / "checkpoints" / "²").mkdir()  # "²".isdigit() is True, int("²") raises
    (run / "checkpoints" / "٣").mkdir()  # Arabic-Indic three: int() would read 3
    assert "already complete" in finished_run(run, "done", 5, signed_config(CFG))
