"""An index folder's inverted lists (issue 38): `index ivf`, search with ``nprobe``, `index add`,
damaged and stale list files, the manifest record, the service's ``nprobe`` field.

The passages are encoded by a clustered stand-in for MiniLM (each text's sha256 picks one of
``CENTRES`` centres, plus noise), so an IVF index has real lists to find; the exact search of
the same folder is the oracle.
"""

import json
import urllib.error
import urllib.request

import numpy as np
import pytest

from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import Index, IndexSearcher
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.ivf_build import train_ivf
from jaxparadigm.retrieval.index.store import read_manifest
from jaxparadigm.retrieval.service.index_service import index_service
from tests.retrieval.service.hash_service import ServingHashEncoder

CENTRES = 12
KW = {"chunk_tokens": 24, "overlap": 4, "shard_rows": 64}


class ClusterEncoder(ServingHashEncoder):
    """Unit vectors near one of ``CENTRES`` fixed centres (which one: the text's hash)."""

    centres = np.random.default_rng(0).standard_normal((CENTRES, 16))

    def vector(self, text):
        noise = super().vector(text)
        which = int.from_bytes(noise.tobytes()[:4], "little") % CENTRES
        v = self.centres[which] / np.linalg.norm(self.centres[which]) + 0.35 * noise
        return (v / np.linalg.norm(v)).astype(np.float32)


def _write_docs(path, start, n):
    lines = [json.dumps({"text": f"note number {i} about topic {i % 7}"}) for i in range(start, n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def built(tmp_path, minilm_tokenizer):
    """A 300-passage index with 8 IVF lists: ``(index_dir, encoder, tmp_path)``."""
    enc = ClusterEncoder(minilm_tokenizer)
    docs = _write_docs(tmp_path / "a.jsonl", 0, 300)
    build_index([docs], tmp_path / "idx", enc, **KW)
    train_ivf(tmp_path / "idx", 8, seed=0, iters=5)
    return tmp_path / "idx", enc, tmp_path


def _queries(enc, n=20, seed=5):
    return np.stack([enc.vector(f"query {seed} {i}") for i in range(n)])


def _recall(got, want):
    return np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want, strict=True)])


def test_every_list_probed_equals_the_exact_search_and_fewer_keep_recall(built):
    idx, enc, _ = built
    m = read_manifest(idx)
    assert m["ivf"]["lists"] == 8 and m["ivf"]["rows"] == m["count"] == 300
    assert m["ivf"]["train_rows"] == 300 and m["ivf"]["seconds"] >= 0
    s = IndexSearcher(idx)
    assert s.lists == 8
    q = _queries(enc)
    every = s.search_vectors(q, 10, nprobe=8)
    # IVF searches alone (batches of the host scan) copy no rows to the devices: neither the
    # exact search's placements nor the lists' device chunks
    assert s.vectors._placements is None and s._ivf is not None and s._ivf._placed is None
    exact = s.search_vectors(q, 10)
    placed = s.vectors._placements
    assert placed is not None  # placed by the first exact search, then kept
    s.search_vectors(q, 10)
    assert s.vectors._placements is placed
    np.testing.assert_array_equal(every.ids, exact.ids)
    np.testing.assert_allclose(every.scores, exact.scores, atol=2e-6)
    assert _recall(s.search_vectors(q, 10, nprobe=3).ids, exact.ids) >= 0.9
    ivf = Index(idx).ivf
    assert ivf is not None and int(np.diff(ivf.offsets).sum()) == 300
    np.testing.assert_array_equal(ivf.rows, Index(idx).embeddings()[ivf.ids])


def test_index_add_puts_new_rows_in_their_lists_and_keeps_recall(built):
    idx, enc, tmp = built
    q = _queries(enc, seed=9)
    before = read_manifest(idx)["ivf"]
    add_to_index(idx, [_write_docs(tmp / "b.jsonl", 300, 500)], enc)
    m = read_manifest(idx)
    assert m["count"] == 500 and m["ivf"]["rows"] == 500 and m["ivf"]["name"] != before["name"]
    assert m["ivf"]["train_rows"] == before["train_rows"]  # the centroids were kept
    assert not list(idx.glob(f"{before['name']}.*"))  # the old lists were deleted
    assert len(list(idx.glob(f"{m['ivf']['name']}.*.npy"))) == 4
    s = IndexSearcher(idx)
    np.testing.assert_array_equal(
        np.asarray(s.index.ivf.centroids), np.asarray(Index(idx).ivf.centroids)
    )
    exact = s.search_vectors(q, 10)
    np.testing.assert_array_equal(s.search_vectors(q, 10, nprobe=8).ids, exact.ids)
    assert _recall(s.search_vectors(q, 10, nprobe=3).ids, exact.ids) >= 0.9
    assert np.any(exact.ids >= 300)  # the new rows are found


def test_an_interrupted_add_keeps_the_last_lists_usable(built, minilm_tokenizer):
    idx, enc, tmp = built
    broken = ClusterEncoder(minilm_tokenizer, fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        add_to_index(idx, [_write_docs(tmp / "b.jsonl", 300, 500)], broken, batch_size=16)
    with pytest.warns(UserWarning, match="searching the 300 passages indexed before it"):
        s = IndexSearcher(idx)  # the committed state: 300 rows, the lists trained on them
    assert len(s) == 300 and s.lists == 8
    q = _queries(enc)
    np.testing.assert_array_equal(s.search_vectors(q, 5, nprobe=8).ids, s.search_vectors(q, 5).ids)
    add_to_index(idx, [tmp / "b.jsonl"], enc)  # the rerun finishes, lists extended
    assert read_manifest(idx)["ivf"]["rows"] == 500


@pytest.mark.parametrize("kind", ["centroids", "offsets", "ids", "rows"])
def test_a_damaged_list_file_is_refused_naming_it(built, kind):
    idx, _, _ = built
    name = read_manifest(idx)["ivf"]["name"]
    path = idx / f"{name}.{kind}.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=rf"{name}\.{kind}\.npy fails its checksum"):
        IndexSearcher(idx)
    path.unlink()
    with pytest.raises(InputError, match=rf"{name}\.{kind}\.npy is missing"):
        Index(idx)


def _replace(idx, kind, array):
    """Write ``array`` as the lists' ``kind`` file with a matching checksum in the manifest: the
    structural checks, not the checksum, must refuse it."""
    import hashlib

    m = read_manifest(idx)
    path = idx / f"{m['ivf']['name']}.{kind}.npy"
    np.save(path, array)
    m["ivf"]["sha256"][kind] = hashlib.sha256(path.read_bytes()).hexdigest()
    (idx / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return m["ivf"]["name"]


@pytest.mark.parametrize(
    "kind, change, match",
    [
        ("ids", lambda a: np.concatenate([a[:-1], a[:1]]), "ids.npy is not a permutation"),
        ("ids", lambda a: a.astype(np.int32), r"ids.npy is int32 \(300,\), expected int64"),
        ("offsets", lambda a: a[::-1].copy(), "offsets.npy is not 0 <= ... <= 300"),
        ("offsets", lambda a: a[:-1].copy(), r"offsets.npy is int64 \(8,\), expected int64 \(9,\)"),
        ("centroids", lambda a: np.where(a > 0, np.nan, a).astype(np.float32), "NaN or inf"),
        ("rows", lambda a: a[:, :8].copy(), r"rows.npy is float32 \(300, 8\)"),
    ],
)
def test_a_structurally_wrong_list_file_is_refused_naming_it(built, kind, change, match):
    idx, _, _ = built
    name = read_manifest(idx)["ivf"]["name"]
    current = np.load(idx / f"{name}.{kind}.npy")
    _replace(idx, kind, change(current))
    with pytest.raises(InputError, match=match):
        IndexSearcher(idx)


def test_stale_lists_and_a_bad_manifest_record_are_refused(built):
    idx, _, _ = built
    m = read_manifest(idx)
    m["ivf"]["rows"] = 299
    (idx / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    with pytest.raises(InputError, match="cover 299 rows, the index holds 300"):
        Index(idx)
    for key, value in [
        ("lists", "8"),
        ("name", "ivf-XYZ"),
        ("sha256", {"rows": "0"}),
        ("seed", -1),
    ]:
        bad = json.loads(json.dumps(m))
        bad["ivf"]["rows"] = 300
        bad["ivf"][key] = value
        (idx / "manifest.json").write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(InputError, match="ivf"):
            Index(idx)


def test_nprobe_without_lists_or_out_of_range_is_refused(built, tmp_path, minilm_tokenizer):
    idx, enc, _ = built
    s = IndexSearcher(idx)
    q = _queries(enc, 2)
    for bad in (0, 9, True, 2.5):
        with pytest.raises(ValueError, match="nprobe"):
            s.search_vectors(q, 3, nprobe=bad)
    with pytest.raises(ValueError, match="approx"):
        s.search(enc, "a query", 3, nprobe=2, approx=True)
    plain = tmp_path / "plain"
    build_index([_write_docs(tmp_path / "c.jsonl", 0, 20)], plain, enc, **KW)
    with pytest.raises(ValueError, match="has no IVF lists"):
        IndexSearcher(plain).search_vectors(q, 3, nprobe=1)
    with pytest.raises(InputError, match="lists: got 21"):
        train_ivf(plain, 21)


def test_retraining_replaces_the_lists_and_deletes_the_old_files(built):
    idx, enc, _ = built
    old = read_manifest(idx)["ivf"]["name"]
    (idx / "ivf.123.deadbeef.rows.npy.tmp").write_bytes(b"left by a crash")
    m = train_ivf(idx, 4, seed=1)
    assert m["ivf"]["lists"] == 4 and m["ivf"]["seed"] == 1
    names = sorted(p.name for p in idx.iterdir())
    assert not [n for n in names if n.startswith(old) or n.endswith(".tmp")], names
    s = IndexSearcher(idx)
    q = _queries(enc, 4)
    np.testing.assert_array_equal(s.search_vectors(q, 5, nprobe=4).ids, s.search_vectors(q, 5).ids)


def test_cli_index_ivf_and_info(built, capsys):
    idx, _, _ = built
    assert cli_main(["index", "ivf", str(idx), "--lists", "6", "--seed", "2", "--iters", "3"]) == 0
    out = capsys.readouterr().out
    assert "trained 6 IVF lists over 300 rows" in out and "seed 2, 3 iterations" in out, out
    assert cli_main(["index", "info", str(idx)]) == 0
    info = capsys.readouterr().out
    sizes = np.diff(np.asarray(Index(idx).ivf.offsets))
    assert f"max {sizes.max()}" in info and "imbalance" in info, info
    assert cli_main(["index", "ivf", str(idx), "--lists", "301"]) == 2
    assert "lists: got 301" in capsys.readouterr().err


def _post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_takes_nprobe_per_request(built):
    idx, enc, _ = built
    svc = index_service(idx, encoder=enc, nprobe="default").start()
    try:
        exact = IndexSearcher(idx).search_vectors(enc.vector("files")[None], 5)
        status, every = _post(svc.url, {"query": "files", "k": 5, "nprobe": 8, "mode": "dense"})
        assert status == 200, every
        assert [h[0] for h in every["hits"]] == exact.ids[0].tolist()
        status, one = _post(
            svc.url, {"query": "files", "k": 5, "mode": "dense"}
        )  # the default: all 8 lists of a 300-row index
        assert status == 200 and [h[0] for h in one["hits"]] == exact.ids[0].tolist()
        for bad in (0, 9, True, "2", 1.5):
            status, err = _post(svc.url, {"query": "files", "k": 5, "nprobe": bad})
            assert status == 400 and "nprobe" in err["error"], (bad, err)
    finally:
        svc.stop()


def test_cli_build_with_ivf_and_search_with_nprobe(encoder, tmp_path, capsys):
    """The real MiniLM (the session's, warm): `index build --ivf`, `search --nprobe`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(
        [
            "A kitten sleeps most of the day and purrs when it is content.",
            "Add an index on the columns in the WHERE clause to avoid a full table scan.",
            "Gradient descent moves the weights against the gradient of the loss.",
        ]
    ):
        (docs / f"d{i}.md").write_text(text, encoding="utf-8")
    idx = str(tmp_path / "idx")
    assert cli_main(["index", "build", str(docs), "--out", idx, "--ivf", "2", "--no-progress"]) == 0
    assert "trained 2 IVF lists over 3 rows" in capsys.readouterr().out
    assert cli_main(["search", "a sleeping cat", "--index", idx, "--top-k", "3"]) == 0
    out = capsys.readouterr().out  # an index with lists: the default nprobe, stated
    assert "IVF: nprobe 2 of 2 lists" in out
    argv = ["search", "a sleeping cat", "--index", idx, "--top-k", "3", "--nprobe", "2"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "IVF: nprobe 2 of 2 lists" in out
    exact = [line for line in out.splitlines() if line.startswith("  ") and ".md [" in line]
    assert len(exact) == 3  # every list probed: every passage can be found
    assert "d0.md" in exact[0]
    assert cli_main(["search", "a sleeping cat", "--index", idx, "--nprobe", "3"]) == 2
    assert "nprobe: got 3" in capsys.readouterr().err
    assert cli_main(["search", "a sleeping cat", "--nprobe", "1"]) == 2
    assert "--nprobe" in capsys.readouterr().err
