"""A run killed after its final checkpoint but before ``report.md`` (issue 34, "Runs").

The old behaviour: running it again printed "already complete (report: .../report.md)" naming a
file that does not exist, and nothing ever wrote it. Now the rerun resumes at the final
checkpoint, trains no step, and writes the report of the same final state.
"""

import re

from jaxparadigm import cli
from tests.train.conftest import tiny_regression_raw


def _signature(report: str) -> str:
    return re.search(r"sha256 of the final state .*: `([0-9a-f]{64})`", report).group(1)


def test_a_finished_run_without_its_report_writes_it_again(tmp_path, capfd):
    import yaml

    raw = tiny_regression_raw(tmp_path, "r", steps=4, checkpoint={"every": 2})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(raw))
    args = ["run", str(path), "--no-progress"]
    assert cli.main(args) == 0
    run = tmp_path / "r"
    first = (run / "report.md").read_text()
    metrics = (run / "metrics.jsonl").read_bytes()
    checkpoints = sorted(p.name for p in (run / "checkpoints").iterdir())
    capfd.readouterr()

    (run / "report.md").unlink()  # the state a SIGKILL between the final save and the report leaves
    assert cli.main(args) == 0
    out = capfd.readouterr().out
    assert "already complete" not in out and f"report: {run / 'report.md'}" in out
    again = (run / "report.md").read_text()
    assert "steps run: 4 of 4 (resumed from checkpoint step 4)" in again
    assert "no steps run in this call" in again and "nan" not in again
    assert _signature(again) == _signature(first)  # the report of the same final state
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == checkpoints
    assert [ln for ln in (run / "metrics.jsonl").read_bytes().splitlines() if b'"loss"' in ln] == [
        ln for ln in metrics.splitlines() if b'"loss"' in ln
    ]

    assert cli.main(args) == 0  # with its report back, the run is complete again
    assert "already complete" in capfd.readouterr().out
