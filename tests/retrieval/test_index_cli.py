"""`jaxparadigm index build|add|info` and `search --index` end to end with the real MiniLM (C1.1)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
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

    query = "make slow database queries faster"
    assert cli_main(["search", query, "--index", idx]) == 0  # hybrid (issue 35): same passages
    assert sorted(h[1] for h in _hits(capsys.readouterr().out))[0].endswith("db/tuning.txt")
    assert cli_main(["search", query, "--index", idx, "--mode", "dense"]) == 0
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
    manifest = (corpus / "idx" / "manifest.json").read_bytes()
    assert (  # issue 47: was exit 2, "the documents hold no text to index"
        cli_main(["index", "add", str(corpus / "more.jsonl"), "--index", idx, "--no-progress"]) == 0
    )
    captured = capsys.readouterr()
    assert (
        captured.out == f"nothing to add: {corpus / 'more.jsonl'} is already indexed (unchanged)\n"
    )
    assert captured.err == "" and (corpus / "idx" / "manifest.json").read_bytes() == manifest
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


def test_cli_skipped_summary_strict_bad_arguments_and_help(encoder, corpus, capsys):
    (corpus / "docs" / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (corpus / "docs" / "photo.png").write_bytes(b"\x89PNG")
    idx = corpus / "idx"
    build = ["index", "build", str(corpus / "docs"), "--no-progress"]
    assert cli_main([*build, "--out", str(idx), "--batch-size", "0"]) == 2  # issue 24 (13)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "batch_size: got 0, expected an int >= 1" in err
    assert not idx.exists()  # checked before anything was written
    assert cli_main([*build, "--out", str(idx), "--strict"]) == 2
    err = capsys.readouterr().err
    assert "skipped 2 inputs (not UTF-8: 1, unsupported type: 1)" in err and "--strict" in err
    assert cli_main([*build, "--out", str(idx)]) == 0  # the build continues past both
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("indexed 2 passages in") and "from 2 sources in 1 shard of" in out[0]
    assert "CPU devices" not in out[0]  # JAX ran before the command: the encoder's one device
    assert out[1] == "skipped 2 inputs (not UTF-8: 1, unsupported type: 1)"
    assert out[2].endswith("latin1.txt: not UTF-8 (byte 0xe9 at offset 3)")
    assert cli_main(["index", "info", str(idx)]) == 0
    assert "    skipped 2 inputs (not UTF-8: 1, unsupported type: 1)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["index", "build", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for needed in (".py", ".html", ".jsonl", ".md", "--strict", "(default: 32)", "(default: 4096)"):
        assert needed in help_text, needed


def test_build_on_two_cpu_devices_gives_the_one_device_index(encoder, tmp_path, capsys):
    """Issue 26: a new ``index build`` process asks XLA for ``--cpu-devices 2`` before JAX starts
    and sends the encoder's micro-batches to both; 40 passages = 2 micro-batches of 32, so the
    second device encodes one. Same embeddings as this process's one-device build, bit for bit."""
    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(40):
        (docs / f"d{i:02d}.txt").write_text(f"Note {i}: " + "word " * (3 + i % 7), encoding="utf-8")
    assert (
        cli_main(["index", "build", str(docs), "--out", str(tmp_path / "one"), "--no-progress"])
        == 0
    )
    assert "CPU devices" not in capsys.readouterr().out
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env |= {"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = ["index", "build", str(docs), "--out", str(tmp_path / "two"), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-m", "jaxparadigm", *argv, "--cpu-devices", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.match(r"indexed 40 passages in [\d.]+ s on 2 CPU devices: ", done.stdout)

    def embeddings(idx):
        (shard,) = sorted((tmp_path / idx).glob("shard_00000-*.npy"))
        return np.load(shard)

    one, two = embeddings("one"), embeddings("two")
    assert one.shape == (40, 384)
    np.testing.assert_array_equal(one, two)


def test_encoder_on_cpu_devices_sets_and_restores_the_cached_encoders_devices(encoder):
    import jax

    from jaxparadigm.app.encoder_devices import encoder_on_cpu_devices

    before = encoder.devices
    with encoder_on_cpu_devices(encoder, 2) as where:
        assert where == " on 2 CPU devices"
        assert encoder.devices == jax.local_devices()[:2]
    assert encoder.devices == before
    with pytest.raises(RuntimeError), encoder_on_cpu_devices(encoder, 3):
        assert len(encoder.devices) == 3
        raise RuntimeError("the build failed")
    assert encoder.devices == before  # restored on an error too
    for count in (None, 1):
        with encoder_on_cpu_devices(encoder, count) as where:
            assert where == "" and encoder.devices == before
