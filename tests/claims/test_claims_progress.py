"""``run_claims`` progress: a line on stderr as each experiment starts and one as it finishes with
its elapsed time; nothing with ``progress=False`` or ``TQDM_DISABLE=1``; the CLI's
``--no-progress``."""

import re
import time

import pytest

from jaxparadigm.claims import ledger
from jaxparadigm.claims.ledger import Experiment


def _experiments(pause_s: float = 0.0):
    def measure():
        time.sleep(pause_s)
        return {"x": 1}

    table = {}
    for claim_id in ("C0.1", "C0.2"):
        exp = Experiment(claim_id, "s", measure)
        exp.decide(lambda ev: ("holds", "ok"))
        table[claim_id] = exp
    return table


@pytest.fixture
def fake_ledger(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(ledger, "experiments", lambda: _experiments(0.1))
    monkeypatch.setattr(ledger, "platform_record", dict)  # not this test's subject (seconds)


def test_a_line_as_each_claim_starts_and_finishes(fake_ledger, capsys):
    verdicts = ledger.run_claims()
    assert [v.claim_id for v in verdicts] == ["C0.1", "C0.2"]
    captured = capsys.readouterr()
    assert captured.out == "" and "\r" not in captured.err
    lines = captured.err.splitlines()
    assert lines[0] == "claims: C0.1 (1/2) started"
    assert re.fullmatch(
        r"claims: 1/2 claims, [\d.]+ claims/s, ETA 0:0\d, last C0\.1 in \d+\.\d s", lines[1]
    )
    assert lines[2] == "claims: C0.2 (2/2) started"
    assert re.fullmatch(
        r"claims: 2/2 claims, [\d.]+ claims/s, ETA 0:00, last C0\.2 in \d+\.\d s", lines[3]
    )
    assert len(lines) == 4
    for line in (lines[1], lines[3]):  # the experiment's own time: it sleeps 0.1 s
        assert 0.1 <= float(re.search(r"in ([\d.]+) s$", line)[1]) < 0.9


def test_progress_off_writes_nothing(fake_ledger, capsys, monkeypatch):
    ledger.run_claims(progress=False)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    ledger.run_claims()
    assert capsys.readouterr().err == ""


def test_the_cli_passes_no_progress(monkeypatch, capsys):
    from jaxparadigm import cli

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(ledger, "experiments", lambda: _experiments())
    monkeypatch.setattr(ledger, "platform_record", dict)
    assert cli.main(["claims", "--only", "C0.1", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "C0.1" in captured.out
    assert cli.main(["claims", "--only", "C0.1"]) == 0
    assert "claims: C0.1 (1/1) started" in capsys.readouterr().err
