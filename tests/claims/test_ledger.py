"""Ledger mechanics: statuses only from rules, rendering, unknown IDs."""

import json
import re

import pytest

from jaxparadigm.claims import Verdict, format_table, verdicts_to_json, write_report
from jaxparadigm.claims.ledger import Experiment


def test_verdict_rejects_unknown_status():
    with pytest.raises(ValueError, match="status"):
        Verdict("C0.0", "maybe", "s", {})
    with pytest.raises(TypeError, match="evidence"):
        Verdict("C0.0", "holds", "s", [1])


def test_experiment_status_comes_from_rule():
    exp = Experiment("C0.1", "x is positive", lambda: {"x": 3.0})
    exp.decide(lambda ev: ("holds", "ok") if ev["x"] > 0 else ("fails", "negative"))
    assert exp.run().status == "holds"
    assert exp.verdict_from({"x": -1.0}).status == "fails"


def test_experiment_without_rule_is_an_error():
    with pytest.raises(RuntimeError, match="no decide rule"):
        Experiment("C0.2", "s", lambda: {}).run()


def test_rendering(tmp_path):
    import numpy as np

    png = tmp_path / "fig.png"
    png.write_bytes(b"\x89PNG fake")
    vs = [
        Verdict(
            "C1.1", "holds", "a " * 80, {"v": np.float32(1.5), "a": np.arange(3), "t": "row1\nrow2"}
        ),
        Verdict(
            "C2.5", "fails", "set_ does not write through", {"nan": float("nan")}, {"p": str(png)}
        ),
    ]
    table = format_table(vs)
    assert "C2.5" in table and "FAILS" in table and "1 hold, 1 fail, 0 conditional" in table
    js = verdicts_to_json(vs)
    assert json.loads(json.dumps(js))[0]["evidence"] == {
        "v": 1.5,
        "a": [0, 1, 2],
        "t": "row1\nrow2",
    }
    assert set(js[1]) >= {"claim_id", "status", "summary", "evidence"}
    report = write_report(vs, tmp_path / "out")
    text = report.read_text()
    assert "What the article gets wrong" in text and "C2_5_fig.png" in text
    assert "```text\nrow1\nrow2\n```" in text
    assert (tmp_path / "out" / "C2_5_fig.png").exists()


def test_update_readme(tmp_path):
    from jaxparadigm.claims.report import README_END, README_START, update_readme

    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{README_START}\nold\n{README_END}\n\nafter\n")
    vs = [Verdict("C2.5", "fails", "set_ rebinds only b", {}), Verdict("C2.1", "holds", "ok", {})]
    update_readme(vs, readme)
    text = readme.read_text()
    assert "\nold\n" not in text and "**C2.5 (fails)**: set_ rebinds only b" in text
    assert "C2.1" not in text and text.endswith("after\n")
    bare = tmp_path / "bare.md"
    bare.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        update_readme(vs, bare)


def test_unknown_claim_id():
    from jaxparadigm.claims import run_claims

    with pytest.raises(ValueError, match="C9.9"):
        run_claims(only=["C9.9"], progress=False)


def test_run_adds_the_platform_record():
    exp = Experiment("C0.3", "s", lambda: {"x": 1})
    exp.decide(lambda ev: ("holds", f"on {ev['platform']['backend']}"))
    v = exp.run()
    assert v.evidence["platform"]["backend"] == "cpu" and v.summary == "on cpu"
    assert {"cpu_model", "usable_cores", "device_kind", "versions"} <= set(v.evidence["platform"])


def test_experiment_receives_its_config_section():
    from jaxparadigm.config import ClaimsConfig, ServiceReadinessConfig

    exp = Experiment("C0.4", "s", lambda cfg: {"p99": cfg.p99_ms}, config="c5_2")
    exp.decide(lambda ev: ("holds", "ok"))
    assert exp.run().evidence["p99"] == 350.0  # the article's number by default
    cfg = ClaimsConfig(c5_2=ServiceReadinessConfig(p99_ms=500.0))
    assert exp.run(cfg).evidence["p99"] == 500.0


def test_no_torch_switch(monkeypatch):
    from jaxparadigm.claims.torch_side import torch_disabled

    for value, disabled in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("JAXPARADIGM_NO_TORCH", value)
        assert torch_disabled() is disabled


def test_report_table_keeps_one_row_per_claim_when_a_summary_has_pipes(tmp_path):
    """A summary quoting |dot - cos| must not split its report.md table row into extra cells."""
    v = Verdict("C1.2", "conditional", "max |dot - cos| = 1.2e-07\nsecond line", {"x": 1})
    text = write_report([v], tmp_path / "out").read_text()
    (row,) = [line for line in text.splitlines() if line.startswith("| C1.2 |")]
    cells = re.split(r"(?<!\\)\|", row)[1:-1]
    assert len(cells) == 3, row
    assert cells[2].strip() == r"max \|dot - cos\| = 1.2e-07 second line"
