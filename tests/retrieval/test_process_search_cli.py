"""``search``/``serve --num-processes 2`` on a real MiniLM index (issue 37): the answer equals one
process's, each process logs its shards, and a killed process gives a non-zero exit naming it
(search) or 503 JSON answers and then exit 3 (serve). CI's full run (a MiniLM index build and
several process groups: about a minute)."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from jaxparadigm.retrieval.index.process_search import FAULT_ENV

pytestmark = pytest.mark.ci_full
REPO = Path(__file__).resolve().parents[2]
QUERY = "how do I resume a training run from its checkpoints"


def cli(*args: str, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jaxparadigm", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    """README.md and the API pages (real text) in shards of <= 16 passages (4 or more)."""
    out = tmp_path_factory.mktemp("cli") / "idx"
    r = cli("index", "build", "README.md", "docs/api", "--out", str(out), "--shard-rows", "16")
    assert r.returncode == 0, r.stderr
    return str(out)


def test_search_over_two_processes_prints_the_single_process_answer(index):
    one = cli("search", QUERY, "--index", index, "--mode", "dense", "--json", "--top-k", "7")
    two = cli(
        "search", QUERY, "--index", index, "--json", "--top-k", "7",
        "--num-processes", "2", "--devices-per-process", "2",
    )  # fmt: skip
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    assert json.loads(two.stdout) == json.loads(one.stdout)
    assert len(json.loads(two.stdout)["hits"]) == 7
    shards = [s["rows"] for s in json.loads(Path(index, "manifest.json").read_text())["shards"]]
    assert len(shards) >= 4, shards
    held = re.search(r"process 0 of 2 holds shards 0-(\d+) \(rows 0-(\d+) of (\d+)\)", two.stderr)
    last, last_row, total = (int(g) for g in held.groups())
    assert total == sum(shards) and last_row + 1 == sum(shards[: last + 1])
    assert 0 < last < len(shards) - 1  # each process holds shards
    logs = re.search(r"the logs of process 1 in (\S+)", two.stderr).group(1)
    rest = f"shards {last + 1}-{len(shards) - 1} (rows {last_row + 1}-{total - 1} of {total})"
    assert f"process 1 of 2 holds {rest}" in Path(logs, "process_1.log").read_text()


def test_search_exits_non_zero_naming_a_killed_process(index):
    t0 = time.monotonic()
    r = cli("search", QUERY, "--index", index, "--num-processes", "2", env={FAULT_ENV: "1@0"})
    assert r.returncode == 3, r.stderr
    assert "process 1 of 2 was killed by SIGKILL" in r.stderr and r.stdout == ""
    assert time.monotonic() - t0 < 120


def post(url: str, query: str, k: int = 5) -> tuple[int, dict]:
    body = json.dumps({"query": query, "k": k}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def worker_pid(launcher: int, process_id: int) -> int:
    """The pid of the launcher's child with JAXPARADIGM_PROCESS_ID=process_id."""
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            env = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == launcher and f"JAXPARADIGM_PROCESS_ID={process_id}".encode() in env:
            return int(entry.name)
    raise AssertionError(f"no process {process_id} under {launcher}")


def test_serve_over_two_processes_batches_answers_then_503_after_a_kill(index):
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxparadigm", "serve", "--index", index, "--port", "0",
         "--num-processes", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        line = ""
        while "serving" not in line:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
        url = re.search(r"at (http://\S+/search)", line).group(1)
        want = json.loads(
            cli("search", QUERY, "--index", index, "--mode", "dense", "--json").stdout
        )
        answers = [None] * 8
        threads = [
            threading.Thread(target=lambda i=i: answers.__setitem__(i, post(url, QUERY)))
            for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for status, payload in answers:
            assert status == 200
            assert [h[0] for h in payload["hits"]] == [h[0] for h in want["hits"]]
            assert [p["text"] for p in payload["passages"]] == [p["text"] for p in want["passages"]]
        os.kill(worker_pid(proc.pid, 1), signal.SIGKILL)
        t0 = time.monotonic()
        status, payload = post(url, QUERY)
        assert status == 503 and "the search group failed" in payload["error"]
        assert time.monotonic() - t0 < 10
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3
    assert "process 1 of 2 was killed by SIGKILL" in err


def test_a_signal_to_the_launcher_stops_every_process_of_serve(index):
    """SIGINT (ignored by default in a background job: the launcher catches it itself) stops the
    group: process 0 stops serving and releases the others, the launcher exits 130."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxparadigm", "serve", "--index", index, "--port", "0",
         "--num-processes", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    try:
        while "serving" not in (line := proc.stdout.readline()):
            assert line, proc.stderr.read()
        workers = [worker_pid(proc.pid, i) for i in (0, 1)]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "stopped by SIGINT" in err
    assert "stopped after 0 request(s)" in out
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    logs = re.search(r"the logs of process 1 in (\S+)", err).group(1)
    assert "process 1: stopped after" in Path(logs, "process_1.log").read_text()
