"""The claims ledger rendered into the site's executed pages (imported by the notebooks).

* ``verdict_table(ids)``: the closing cell of every tutorial. Runs
  ``jaxparadigm.claims.run_claims(only=ids)`` and returns a Markdown table of each claim's
  statement, computed status and summary.
* ``show_report(path)``: displays a report written by ``jaxparadigm.claims.write_report`` (what
  ``jaxparadigm claims --report DIR`` writes) as notebook outputs: its Markdown, and its figures as
  embedded PNGs.

Nothing here is typed in: statuses and summaries are the ledger's ``Verdict`` fields, the platform
line is the evidence's ``platform`` record.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

from IPython.display import Image, Markdown, display
from tqdm import TqdmWarning

# The ledger imports tqdm.auto, which warns inside a kernel without ipywidgets; the pages run the
# ledger with progress=False, so the warning says nothing about them.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", TqdmWarning)
    from jaxparadigm.claims import Verdict, experiments, run_claims
from jaxparadigm.claims.platform_record import describe_platform

_BADGE = {s: f'<span class="verdict-{s}">{s}</span>' for s in ("holds", "fails", "conditional")}
_IMAGE = re.compile(r"^!\[(?P<name>[^\]]*)\]\((?P<file>[^)]+)\)$")
# A verdict row of the report's table: "| id | status | summary |"; the summary may hold pipes.
_ROW = re.compile(r"^\| (?P<id>C\d+\.\d+) \| (?P<status>\w+) \| (?P<summary>.*) \|$")


def _cell(text: str) -> str:
    """One Markdown table cell: no pipe or newline may break the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def measured_on(verdicts: Sequence[Verdict]) -> str:
    """One sentence naming the platform and PyTorch version recorded in the first verdict's evidence."""
    platform = verdicts[0].evidence["platform"]
    torch = platform["versions"].get("torch", "not measured")
    return f"Computed when this page was built, on {describe_platform(platform)}; PyTorch: {torch}."


def verdict_table(ids: Sequence[str]) -> Markdown:
    """Run the ledger for ``ids`` and render claim, statement, status and summary as a table."""
    statements = experiments()
    verdicts = run_claims(only=list(ids), progress=False)
    rows = [
        "| claim | the article says | verdict | what was measured |",
        "|---|---|---|---|",
    ]
    rows += [
        f"| {v.claim_id} | {_cell(statements[v.claim_id].statement)} "
        f"| {_BADGE[v.status]} | {_cell(v.summary)} |"
        for v in verdicts
    ]
    rows += [
        "",
        f"{measured_on(verdicts)} Every status comes from the claim's `decide` rule applied to "
        "what its `measure` function recorded (the {doc}`claims report </claims_report>` shows "
        "the evidence).",
    ]
    return Markdown("\n".join(rows))


def show_report(report: str | Path) -> None:
    """Display ``report.md`` (from ``write_report``) as Markdown outputs and embedded figures.

    The report's own title is dropped (the page has one); a pipe inside a summary cell of its
    verdict table is escaped so the row keeps three cells; each claim's JSON evidence is folded
    into a ``<details>`` element; each ``![name](file)`` line becomes an embedded PNG.
    """
    report = Path(report)
    lines = report.read_text(encoding="utf-8").splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    chunk: list[str] = []
    in_json = False

    def flush() -> None:
        if any(line.strip() for line in chunk):
            display(Markdown("\n".join(chunk)))
        chunk.clear()

    for line in lines:
        image = _IMAGE.match(line)
        if image:
            flush()
            display(Markdown(f"*Figure `{image['name']}`:*"))
            display(Image(filename=str(report.parent / image["file"])))
            continue
        row = _ROW.match(line)
        if row:
            line = f"| {row['id']} | {_BADGE[row['status']]} | {_cell(row['summary'])} |"
        if line == "```json":  # each claim's evidence record: folded, one click away
            in_json = True
            chunk += ["<details><summary>evidence (JSON)</summary>", ""]
        chunk.append(line)
        if in_json and line == "```":
            in_json = False
            chunk += ["", "</details>"]
    flush()
