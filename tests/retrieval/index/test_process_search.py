"""Exact search split over jax.distributed processes (issue 37): the shard split, the merge rule,
an Index opened for one part, and real 2-process groups (launched like `run --num-processes`)
whose ids, scores and passages must equal one process searching every shard."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.passages import Passage
from jaxparadigm.retrieval.index.process_search import FAULT_ENV, merge_process_topk
from jaxparadigm.retrieval.index.reader import Index, shard_range
from jaxparadigm.retrieval.index.store import new_manifest, write_manifest, write_shard

WORKER = Path(__file__).with_name("process_search_worker.py")


def write_vectors(out: Path, x: np.ndarray, shard_rows: int) -> Path:
    """Unit rows ``x`` as an index folder, passage ``r``'s text ``"passage r"``."""
    out.mkdir(parents=True)
    build = {"chunk_tokens": 2, "overlap": 0, "batch_size": 1}  # a valid manifest: none used
    m = new_manifest(
        {"name": "generated", "dim": x.shape[1], "max_seq_length": 8}, shard_rows, build
    )
    for j, a in enumerate(range(0, len(x), shard_rows)):
        rows = x[a : a + shard_rows]
        texts = [Passage("gen.txt", r, r + 1, f"passage {r}") for r in range(a, a + len(rows))]
        m["shards"].append(write_shard(out, j, rows, texts))
        m["count"] += len(rows)
    m["status"], m["sources"] = "complete", [{"source": "gen.txt", "passages": m["count"]}]
    write_manifest(out, m)
    return out


def generated(n: int, dim: int, seed: int, copies: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit rows where row 3 is repeated ``copies`` times across the corpus (ties that span
    processes), and queries: row 3 itself, a row, random directions."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    x[np.linspace(n // 3, n - 1, copies).astype(int)] = x[3]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.standard_normal((6, dim)).astype(np.float32)
    q[0], q[1] = x[3], x[n // 2]
    return x, q / np.linalg.norm(q, axis=1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 8))
def test_shard_range_partitions_shards_contiguously_and_balanced(shards, parts):
    ranges = [shard_range(shards, p, parts) for p in range(parts)]
    assert [s for r in ranges for s in r] == list(range(shards))  # in order, each once
    sizes = [len(r) for r in ranges]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(1, 6),
    st.integers(1, 8),
    st.randoms(use_true_random=False),
)
def test_merge_equals_sorting_every_candidate(procs, q, m, k, rnd):
    """Oracle: every candidate sorted by (score descending, id ascending), padding (-1) last."""
    ids = np.array(rnd.sample(range(100), procs * m)).reshape(procs, 1, m).repeat(q, 1)
    scores = np.array([rnd.choice([0.5, 0.25, -0.5, 1.0]) for _ in range(procs * q * m)])
    scores = scores.reshape(procs, q, m).astype(np.float32)
    pad = rnd.random() < 0.5
    if pad:  # a process with fewer rows than k pads with (-inf, -1)
        ids[-1, :, -1], scores[-1, :, -1] = -1, -np.inf
    top = merge_process_topk(scores, ids, k)
    for i in range(q):
        cands = [
            (-float(s), int(d))
            for s, d in zip(scores[:, i].ravel(), ids[:, i].ravel(), strict=True)
        ]
        cands.sort(key=lambda c: (c[0], c[1] if c[1] >= 0 else 1 << 40))
        want = cands[:k]
        assert top.ids[i].tolist() == [d for _, d in want]
        np.testing.assert_array_equal(top.scores[i], np.float32([-s for s, _ in want]))


def test_index_part_opens_and_checks_only_its_own_shards(tmp_path):
    x, _ = generated(50, 8, 0)
    path = write_vectors(tmp_path / "idx", x, 10)  # 5 shards: part 1 of 2 holds 2-4
    whole = Index(path)
    other = next(path.glob("shard_00000-*.npy"))
    other.write_bytes(b"damaged")  # another process's shard: never read by part 1
    part = Index(path, part=(1, 2))
    assert part.held == range(2, 5) and part.first_row == 20 and len(part) == 30
    np.testing.assert_array_equal(part.embeddings(), whole.embeddings()[20:])
    assert part.passage(20).text == "passage 20"
    with pytest.raises(InputError, match=r"row: got 19, held by another process.*shards 2-4"):
        part.passage(19)
    with pytest.raises(InputError, match="shard_00000"):
        Index(path, part=(0, 2))  # part 0 holds the damaged shard: refused, naming it
    with pytest.raises(InputError, match=r"5 shard\(s\).*at least one per process \(6\)"):
        Index(path, part=(0, 6))
    with pytest.raises(InputError, match=r"row: got 50, expected 0 <= row < 50"):
        whole.passage(50)


def run_group(tmp: Path, index: Path, q: np.ndarray, k: int, devices: int, env=None):
    """The worker script as a 2-process group; returns process 0's ``(npz, json)``."""
    from jaxparadigm.train.launch import launch_workers

    np.save(tmp / "q.npy", q)
    cmd = [sys.executable, str(WORKER), str(index), str(tmp / "q.npy"), str(k), str(tmp / "out")]
    before = dict(os.environ)
    os.environ.update(env or {})
    try:
        launch_workers(
            cmd, tmp / "run", num_processes=2, devices_per_process=devices, timeout_s=120
        )
    finally:
        os.environ.clear()
        os.environ.update(before)
    return np.load(tmp / "out.npz"), json.loads((tmp / "out.json").read_text())


@pytest.mark.parametrize(
    "devices, k",
    [(1, 170), (1, 310), pytest.param(2, 170, marks=pytest.mark.ci_full)],
)
def test_two_processes_return_the_single_process_ids(tmp_path, devices, k):
    """Ids, scores (bitwise) and passages equal one process's exact search over every shard,
    ties (12 copies of a row spread over both processes) to the lower row everywhere. k = 170:
    more than process 1 holds (its candidates are padded); k = 310: more than the 300 rows (every
    row comes back, once)."""
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    x, q = generated(300, 16, 1)
    index = write_vectors(tmp_path / "idx", x, 40)  # 8 shards: rows 0-159 | 160-299
    got, info = run_group(tmp_path, index, q, k, devices)
    one = IndexSearcher(index).search_vectors(q, k)
    np.testing.assert_array_equal(got["ids"], one.ids)
    np.testing.assert_array_equal(got["scores"], one.scores)
    assert sorted(got["ids"][0][:12].tolist()) == got["ids"][0][:12].tolist()  # the tie rule
    assert got["ids"].shape == (len(q), min(k, 300))
    assert info["passages"] == [[f"passage {r}" for r in row] for row in one.ids.tolist()]
    assert [h[:2] for h in info["held"]] == [[0, 4], [4, 8]]


@pytest.mark.ci_full
def test_a_killed_process_fails_the_group_naming_it(tmp_path):
    from jaxparadigm.train.launch import WorkerFailed

    x, q = generated(100, 8, 2)
    index = write_vectors(tmp_path / "idx", x, 25)
    t0 = time.monotonic()
    with pytest.raises(WorkerFailed, match="process 1 of 2 was killed by SIGKILL"):
        run_group(tmp_path, index, q, 5, 1, env={FAULT_ENV: "1@0"})
    assert time.monotonic() - t0 < 60


@pytest.mark.ci_full
def test_processes_that_opened_different_manifests_refuse_to_search(tmp_path, capfd):
    """Each process checks the manifest it opened against process 0's (here process 1 opens an
    index with 20 rows more, as if an `index add` committed between the two opens)."""
    x, q = generated(120, 8, 3)
    index = write_vectors(tmp_path / "idx", x[:100], 25)
    other = write_vectors(tmp_path / "other", x, 25)
    from jaxparadigm.train.launch import WorkerFailed

    # the worker script lets the InputError end it (status 1; the CLI exits 2 on it)
    with pytest.raises(WorkerFailed, match=r"process [01] of 2 exited with status 1") as info:
        run_group(tmp_path, index, q, 5, 1, env={"OTHER_INDEX_1": str(other)})
    said = str(info.value) + capfd.readouterr().err  # process 0's stderr comes through ours
    said += (tmp_path / "run" / "logs" / "process_1.log").read_text()
    assert "opened another manifest than process 0" in said


@pytest.mark.parametrize(
    "args, message",
    [
        (["q", "--num-processes", "2"], "--num-processes: splits an index"),
        (["q", "--index", "x", "--devices-per-process", "2"], "without --num-processes"),
        (
            ["q", "--index", "x", "--num-processes", "2", "--mode", "hybrid"],
            "--mode='hybrid': the BM25 ranking of hybrid needs every passage, but in a search "
            "split over 2 processes each holds only its own shards; expected --mode='dense'",
        ),
        (
            ["q", "--index", "x", "--num-processes", "2", "--nprobe", "3"],
            "--nprobe=3: the IVF lists span every process's rows",
        ),
        (
            ["q", "--index", "x", "--num-processes", "3", "--mode", "dense", "--approx"],
            "--approx=True: a search split over 3 processes merges",
        ),
        (["q", "--index", "x", "--num-processes", "0"], "--num-processes: got 0"),
    ],
)
def test_search_group_options_refused_before_anything_starts(args, message, capsys):
    from jaxparadigm.cli import main

    assert main(["search", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def peak_kib(tmp: Path, index: Path, q: np.ndarray, group: bool) -> list[int]:
    """Each process's VmHWM (KiB) after opening ``index`` and searching: a 2-process group, or
    the worker alone."""
    if group:
        return [h[2] for h in run_group(tmp, index, q, 10, 1)[1]["held"]]
    np.save(tmp / "q.npy", q)
    cmd = [sys.executable, str(WORKER), str(index), str(tmp / "q.npy"), "10", str(tmp / "out")]
    subprocess.run(cmd, check=True, timeout=300)
    return [json.loads((tmp / "out.json").read_text())["held"][0][2]]


@pytest.mark.ci_full
def test_each_process_holds_about_half_of_a_200k_row_index(tmp_path):
    """VmHWM grows with the rows a process holds: over 200,000 x 384 float32 rows (307 MB) each
    of 2 processes grows by about half of what one process searching alone grows by (both
    against the same run on a 4,000-row index)."""
    rng = np.random.default_rng(0)
    grown = {}
    for n in (4_000, 200_000):
        x = rng.standard_normal((n, 384)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        index = write_vectors(tmp_path / f"idx{n}", x, n // 8)
        q = x[:4].copy()
        del x
        for group in (False, True):
            (tmp_path / f"{n}{group}").mkdir()
            grown[n, group] = peak_kib(tmp_path / f"{n}{group}", index, q, group)
    alone = grown[200_000, False][0] - grown[4_000, False][0]
    each = [a - b for a, b in zip(grown[200_000, True], grown[4_000, True], strict=True)]
    rows_kib = 196_000 * 384 * 4 / 1024
    print(f"VmHWM KiB {grown}; grown alone {alone}, per process {each}")
    assert alone > 0.9 * rows_kib  # one process: at least the rows themselves
    for grew in each:
        assert 0.35 < grew / alone < 0.75, (each, alone)  # holding every row: about 1
