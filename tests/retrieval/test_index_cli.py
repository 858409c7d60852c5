"""`jaxparadigm index build|add|info` and `search --index` end to end with the real MiniLM (C1.1)."""

import json
import re

import pytest

from jaxparadigm.cli import main as cli_main

DOCS = {
    "pets/cats.md": "# Cats\nA kitten sleeps most of the day and purrs when it is content.",
    "db/tuning.txt": "Add an index on the columns in the WHERE clause so the database query "
    "planner can avoid a full table scan; read the execution plan to find slow joins.",
}
EXTRA = {"text": "Gradient descent moves the weights against the gradient of the loss."}


@pytest.fixture
def corpus(tmp_path):
    for name, text in DOCS.items():
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    (tmp_path / "more.jsonl").write_text(json.dumps(EXTRA) + "\n", encoding="utf-8")
    return tmp_path


HIT = re.compile(r"^  \d+\. \[(-?[\d.]+)\] (.+) \[(\d+):(\d+)\]$")


def _hits(out):
    """``[(score, source, start, end)]`` from the lines `search --index` prints."""
    found = [HIT.match(line) for line in out.splitlines()]
    return [(float(m[1]), m[2], int(m[3]), int(m[4])) for m in found if m]


def test_build_info_search_add_and_tamper(encoder, corpus, capsys):
    idx = str(corpus / "idx")
    args = ["index", "build", str(corpus / "docs"), "--out", idx, "--no-progress"]
    assert cli_main([*args, "--chunk-tokens", "24", "--overlap", "4"]) == 0
    out = capsys.readouterr().out
    assert f"{idx} now holds" in out and "all-MiniLM-L6-v2" in out

    assert cli_main(["index", "info", idx]) == 0
    info = capsys.readouterr().out
    assert "status: complete" in info and "chunk_tokens=24, overlap=4" in info
    assert "docs/db/tuning.txt:" in info and "docs/pets/cats.md:" in info

    assert cli_main(["search", "make slow database queries faster", "--index", idx]) == 0
    hits = _hits(capsys.readouterr().out)
    assert len(hits) == 3  # every passage (top-k 5 is capped at the 3 indexed)
    assert [h[1].rsplit("docs/", 1)[1] for h in hits] == ["db/tuning.txt"] * 2 + ["pets/cats.md"]
    assert hits[0][0] > hits[1][0] > hits[2][0] and hits[0][0] <= 1
    assert (
        cli_main(["search", "a sleepy young cat", "--index", idx, "--top-k", "1", "--stream"]) == 0
    )
    out = capsys.readouterr().out
    assert [h[1][-12:] for h in _hits(out)] == ["pets/cats.md"] and "kitten" in out

    assert (
        cli_main(["index", "add", str(corpus / "more.jsonl"), "--index", idx, "--no-progress"]) == 0
    )
    assert "added 1 passage in" in capsys.readouterr().out  # issue 25: plurals
    assert (
        cli_main(["search", "how does gradient descent train", "--index", idx, "--dtype", "int8"])
        == 0
    )
    assert _hits(capsys.readouterr().out)[0][1].endswith("more.jsonl:1")

    assert cli_main(["search", " \x00 ", "--index", idx]) == 2
    assert "finds no word piece" in capsys.readouterr().err
    assert cli_main(["search", "\U0001f600", "--index", idx, "--top-k", "1"]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "[UNK]" in captured.err and "1. [" in captured.out

    shard = next((corpus / "idx").glob("shard_00000-*.npy"))
    shard.write_bytes(shard.read_bytes()[:-4] + b"\0\0\0\0")
    assert cli_main(["search", "cat", "--index", idx]) == 2
    err = capsys.readouterr().err
    assert f"shard {shard.stem}: {shard.name} fails its checksum" in err


def test_cli_refusals(corpus, capsys):
    assert cli_main(["index", "info", str(corpus / "nothing")]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    assert cli_main(["index", "build", str(corpus / "missing"), "--out", str(corpus / "i")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
