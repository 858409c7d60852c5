"""Write tests/ci_full_slow_tests.txt from a measured default run (issues 25, 35).

    make test PYTEST_ARGS="--durations=0" > run.log 2>&1
    .venv/bin/python tools/ci_full_split.py run.log [--threshold 1.5] [--keep-listed]

Each test's time is its setup + call + teardown as pytest's ``--durations=0`` report gives them.
The tests at or over ``--threshold`` seconds are listed (slowest first) and so move to CI's full run
(``make test-ci-full``); ``--keep-listed`` keeps the ids already listed (they did not run in the
measured default run, so the log has no time for them). The header records the log's summary line,
the CPU and the threshold.
"""

from __future__ import annotations

import argparse
import collections
import platform
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.ci_full_selection import SLOW_TESTS_FILE  # noqa: E402

DURATION = re.compile(r"^([0-9.]+)s (call|setup|teardown)\s+(\S.*)$")
SUMMARY = re.compile(r"^=* ?(\d+ passed.* in [0-9.]+s.*?) ?=*$")


def durations(log: str) -> dict[str, float]:
    """Node id -> seconds (setup + call + teardown) from a ``--durations=0`` report."""
    total: dict[str, float] = collections.defaultdict(float)
    for line in log.splitlines():
        m = DURATION.match(line.rstrip())
        if m:
            total[m[3]] += float(m[1])
    if not total:
        raise SystemExit("no durations in the log: run pytest with --durations=0")
    return dict(total)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--threshold", type=float, default=1.5)
    parser.add_argument("--keep-listed", action="store_true")
    args = parser.parse_args(argv)
    text = args.log.read_text(encoding="utf-8", errors="replace")
    times = durations(text)
    slow = {i: t for i, t in times.items() if t >= args.threshold}
    old = SLOW_TESTS_FILE.read_text(encoding="utf-8").splitlines() if args.keep_listed else []
    runs = [line for line in old if line.startswith("# measured: ")]
    kept = [line for line in old if line and not line.startswith("#")]
    kept = [line for line in kept if line.split("\t", 1)[1] not in slow]
    summary = next((m[1] for m in map(SUMMARY.match, text.splitlines()) if m), "no summary line")
    lines = [
        "# Tests moved to CI's full run because they are slow: each took at least the threshold",
        "# (setup + call + teardown) in a measured default run; a later run (--keep-listed) adds the",
        "# tests that became the slowest once the earlier ones had left (they now pay the compiles).",
        "# Written by tools/ci_full_split.py; read by tests/conftest.py. Format: seconds<TAB>node id.",
        *runs,
        f"# measured: {summary}; {cpu_model()}; threshold {args.threshold:g} s; {len(slow)} tests",
        *(f"{t:.2f}\t{i}" for i, t in sorted(slow.items(), key=lambda kv: (-kv[1], kv[0]))),
        *kept,
    ]
    SLOW_TESTS_FILE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    moved = sum(slow.values())
    print(
        f"{len(slow)} tests at or over {args.threshold:g} s ({moved:.0f} of {sum(times.values()):.0f} "
        f"s of test time) -> {SLOW_TESTS_FILE.relative_to(ROOT)}"
        + (f"; {len(kept)} listed before kept" if kept else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
