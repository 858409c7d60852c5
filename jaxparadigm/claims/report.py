"""Rendering verdicts: terminal table, JSON list, a Markdown report with plots, the README section."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

from jaxparadigm.claims.verdict import Verdict

_MARK = {"holds": "holds", "fails": "FAILS", "conditional": "conditional"}


def verdicts_to_json(verdicts: list[Verdict]) -> list[dict]:
    """A JSON-able list of objects with keys claim_id, status, summary, evidence (and figures)."""
    return [v.to_json() for v in verdicts]


def format_table(verdicts: list[Verdict], width: int = 100) -> str:
    """A plain-text table: id, status, one-line summary (wrapped to ``width``)."""
    lines = [f"{'id':<6} {'status':<12} summary", f"{'-' * 6} {'-' * 12} {'-' * (width - 20)}"]
    for v in verdicts:
        wrapped = textwrap.wrap(v.summary, width - 20) or [""]
        lines.append(f"{v.claim_id:<6} {_MARK[v.status]:<12} {wrapped[0]}")
        lines += [f"{'':<6} {'':<12} {w}" for w in wrapped[1:]]
    counts = {s: sum(v.status == s for v in verdicts) for s in _MARK}
    lines.append(
        f"\n{len(verdicts)} claims: {counts['holds']} hold, {counts['fails']} fail, "
        f"{counts['conditional']} conditional"
    )
    return "\n".join(lines)


def article_errata(verdicts: list[Verdict]) -> str:
    """Markdown bullet list of the claims that fail or hold only conditionally (for the README)."""
    rows = [
        f"- **{v.claim_id} ({v.status})**: {v.summary}"
        for v in verdicts
        if v.status in ("fails", "conditional")
    ]
    return "\n".join(rows) if rows else "- (every claim held in this run)"


def write_report(verdicts: list[Verdict], directory: str | os.PathLike) -> Path:
    """Write ``report.md`` (table, evidence, embedded plots) and ``verdicts.json`` into ``directory``.

    Figures are copied next to the report so the directory is self-contained. Returns the report path.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        "# Claims ledger",
        "",
        "Each verdict is computed by code from the evidence below (`jaxparadigm claims`).",
        "",
        "| id | status | summary |",
        "|---|---|---|",
    ]
    parts += [f"| {v.claim_id} | {v.status} | {v.summary} |" for v in verdicts]
    parts += ["", "## What the article gets wrong", "", article_errata(verdicts), ""]
    for v in verdicts:
        parts += [f"## {v.claim_id}: {v.status}", "", v.summary, "", "```json"]
        parts += [json.dumps(v.to_json()["evidence"], indent=2), "```", ""]
        for name, src in v.figures.items():
            src_path = Path(src)
            if not src_path.is_file():
                raise FileNotFoundError(f"figure {name!r} of {v.claim_id}: no file {src}")
            dst = out / f"{v.claim_id.replace('.', '_')}_{src_path.name}"
            if src_path.resolve() != dst.resolve():
                shutil.copyfile(src_path, dst)
            parts += [f"![{name}]({dst.name})", ""]
    report = out / "report.md"
    report.write_text("\n".join(parts), encoding="utf-8")
    (out / "verdicts.json").write_text(json.dumps(verdicts_to_json(verdicts), indent=2))
    return report
