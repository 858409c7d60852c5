"""IVF search: recall@10 vs queries/s over nprobe, against our exact search and FAISS IndexIVFFlat (issue 38).

    jaxparadigm bench ivf [--n 200000] [--lists 256] [--full] [--parts clustered pydoc]
                          [--compare] [--results FILE] [--plot FILE]

1. **Clustered** ``n`` x 384 unit rows: ``10 * lists`` centres on the unit sphere, each row a
   centre plus Gaussian noise (``--sigma``, 0.05 per dimension: a noise norm of about 1, as
   large as the centre), normalised; the queries are fresh draws of the same mixture. The rows
   are written as an index folder and ``train_ivf`` (k-means + assignment + files) is timed.
   Then, per ``nprobe``: recall@10 against the exact search, and q/s at batch 1 (``--single``
   queries, one at a time, rotating, so a list is rarely in cache) and batch 64, ours and FAISS
   ``IndexIVFFlat`` **with our centroids and so the same lists** (its coarse quantiser an
   ``IndexFlatL2`` holding our centroids: FAISS assigns and probes by L2, as we do), interleaved
   medians; our exact search at batch 1 and 64 beside them. Where FAISS is ahead, ours is timed
   part by part (probe, host plan, device scan, host merge). ``--compare`` also times the
   row-major scan (one (query, chunk) pair a tile, one loop a device: the scan before list-major
   tiles) in the same rounds, prints after/before ratios and checks the two give equal ids and
   scores at batch 64. The ratios compare like with like: the bare ``IVFSearcher`` as it is
   (batches of up to ``HOST_QUERIES`` queries scanned list-major on the host, larger ones by
   list-major tiles on the devices; the "bare list-major" columns) against the bare row-major one
   with every batch on the device (``host_queries=0``) (the "ours" columns go through
   ``IndexSearcher.search_vectors``, the user's path, with its checks).
2. **pydoc**: the Python documentation topics shipped with the interpreter (``pydoc_data``),
   ``--pydoc-window``-token passages encoded by MiniLM (``index build``), IVF lists trained on
   them, and the 70 labelled queries of the claims: recall@10 against exact per ``nprobe``,
   the default ``nprobe`` marked.

CPU model, flags and the 1-minute load average (start and end) are printed with the figures.
FAISS (``pip install -e '.[bench]'``) is optional: without it its columns are left out.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_bench import cpu_info, interleaved, recall, write_vector_index  # noqa: E402


def clustered(n: int, dim: int, centres: int, sigma: float, seed: int) -> np.ndarray:
    """``n`` unit rows: a random centre of ``centres`` (unit) plus ``sigma`` noise, normalised."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, dim), dtype=np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    out = np.empty((n, dim), np.float32)
    for a in range(0, n, 65536):
        m = min(65536, n - a)
        x = c[rng.integers(0, centres, m)] + sigma * rng.standard_normal((m, dim), np.float32)
        out[a : a + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def faiss_ivf(faiss, centroids: np.ndarray, x: np.ndarray):
    """IndexIVFFlat (inner product) whose coarse quantiser holds ``centroids`` (L2)."""
    quant = faiss.IndexFlatL2(x.shape[1])
    quant.add(np.ascontiguousarray(centroids))
    index = faiss.IndexIVFFlat(quant, x.shape[1], len(centroids), faiss.METRIC_INNER_PRODUCT)
    index.is_trained = True
    index.add(x)
    return index, quant


def moved_rows(quant, centroids: np.ndarray, ivf, x: np.ndarray) -> tuple[int, float]:
    """How many rows FAISS's L2 quantiser puts in another list than ours, and the largest float64
    gap between the two lists' squared distances among them."""
    _, theirs = quant.search(x, 1)
    ours = np.empty(len(x), np.int64)
    ours[np.asarray(ivf.ids)] = np.repeat(np.arange(len(centroids)), np.diff(ivf.offsets))
    moved = np.flatnonzero(theirs[:, 0] != ours)
    if not len(moved):
        return 0, 0.0
    c = centroids.astype(np.float64)
    xm = x[moved].astype(np.float64)
    d_ours = ((xm - c[ours[moved]]) ** 2).sum(1)
    d_theirs = ((xm - c[theirs[moved, 0]]) ** 2).sum(1)
    return len(moved), float(np.max(np.abs(d_ours - d_theirs)))


def one_by_one(search, queries: np.ndarray):
    """A callable searching each query alone (batch 1), in turn."""

    def run():
        for i in range(len(queries)):
            search(queries[i : i + 1])

    return run


def clustered_section(args, lines, faiss, curve) -> None:
    from jaxparadigm.retrieval.dense.ivf_search import default_nprobe
    from jaxparadigm.retrieval.index.ivf_build import train_ivf
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    centres = args.centres or 10 * args.lists
    x = clustered(args.n + args.batch + args.single, args.dim, centres, args.sigma, seed=0)
    q64, q1 = x[args.n : args.n + args.batch], x[args.n + args.batch :]
    x = x[: args.n]
    tmp = Path(tempfile.mkdtemp(prefix="ivf_bench_"))
    write_vector_index(tmp / "idx", x, shard_rows=131072)
    m = train_ivf(tmp / "idx", args.lists, seed=0, iters=args.iters)
    ivf = m["ivf"]
    s = IndexSearcher(tmp / "idx")
    exact64 = s.search_vectors(q64, 10).ids
    exact1 = s.search_vectors(q1, 10).ids
    ex = interleaved(
        {
            "b64": lambda: s.search_vectors(q64, 10),
            "b1": one_by_one(lambda q: s.search_vectors(q, 10), q1),
        },
        args.repeats,
    )
    exact_b1, exact_b64 = len(q1) / ex["b1"], len(q64) / ex["b64"]
    curve["exact"] = {"b1": exact_b1, "b64": exact_b64}
    fx = None
    if faiss is not None:
        t0 = time.perf_counter()
        centroids = np.asarray(s.index.ivf.centroids)
        fx, quant = faiss_ivf(faiss, centroids, x)
        faiss_add = time.perf_counter() - t0
        moved, gap = moved_rows(quant, centroids, s.index.ivf, x)
    rows = []
    old = row_major(s) if args.compare else None
    for p in [v for v in args.nprobe if v <= args.lists]:
        got64 = s.search_vectors(q64, 10, nprobe=p)
        ours64 = got64.ids
        ours1 = s.search_vectors(q1, 10, nprobe=p).ids
        fns = {
            "ours b1": one_by_one(lambda q, p=p: s.search_vectors(q, 10, nprobe=p), q1),
            "ours b64": lambda p=p: s.search_vectors(q64, 10, nprobe=p),
        }
        row = {
            "nprobe": p,
            "recall": recall(np.concatenate([ours64, ours1]), np.concatenate([exact64, exact1])),
        }
        row["b64 scan"] = (
            "host, list-major"
            if len(q64) <= s._ivf.host_queries
            else f"tiles of {s._ivf.tile_queries(s._ivf.probe(q64, p))} queries"
        )
        if old is not None:
            before = old.search(q64, 10, p)
            row["same as row-major"] = bool(
                np.array_equal(before.ids, ours64) and np.array_equal(before.scores, got64.scores)
            )
            fns["row-major b1"] = one_by_one(lambda q, p=p: old.search(q, 10, p), q1)
            fns["row-major b64"] = lambda p=p: old.search(q64, 10, p)
            fns["list-major b1"] = one_by_one(lambda q, p=p: s._ivf.search(q, 10, p), q1)
            fns["list-major b64"] = lambda p=p: s._ivf.search(q64, 10, p)
        if fx is not None:
            fx.nprobe = p
            f64 = fx.search(q64, 10)[1]
            f1 = fx.search(q1, 10)[1]
            row["faiss recall"] = recall(
                np.concatenate([f64, f1]), np.concatenate([exact64, exact1])
            )
            row["same ids"] = float(
                np.mean(
                    np.all(np.concatenate([f64, f1]) == np.concatenate([ours64, ours1]), axis=1)
                )
            )
            fns["faiss b1"] = one_by_one(lambda q: fx.search(q, 10), q1)
            fns["faiss b64"] = lambda: fx.search(q64, 10)
        t = interleaved(fns, args.repeats)
        for k, v in t.items():
            row[k] = (len(q1) if k.endswith("b1") else len(q64)) / v
        rows.append(row)
    curve["clustered"] = rows
    hit = next((r for r in rows if r["recall"] >= 0.95), None)
    head = "| nprobe | recall@10 | ours b1 q/s | ours b64 q/s | b64 scan |"
    rule = "|---|---|---|---|---|"
    if old is not None:
        head += (
            " bare list-major b1 q/s | bare list-major b64 q/s | bare row-major b1 q/s |"
            " bare row-major b64 q/s | b1 after/before | b64 after/before | equal |"
        )
        rule += "---|---|---|---|---|---|---|"
    if fx is not None:
        head += " FAISS recall@10 | identical top-10 ids | FAISS b1 q/s | FAISS b64 q/s | b1 ours/FAISS | b64 ours/FAISS |"
        rule += "---|---|---|---|---|---|"
    table = [head, rule]
    for r in rows:
        line = (
            f"| {r['nprobe']} | {r['recall']:.4f} | {r['ours b1']:.0f} | {r['ours b64']:.0f} | "
            f"{r['b64 scan']} |"
        )
        if old is not None:
            line += (
                f" {r['list-major b1']:.0f} | {r['list-major b64']:.0f} | "
                f"{r['row-major b1']:.0f} | {r['row-major b64']:.0f} | "
                f"{r['list-major b1'] / r['row-major b1']:.2f}x | "
                f"{r['list-major b64'] / r['row-major b64']:.2f}x | {r['same as row-major']} |"
            )
        if fx is not None:
            line += (
                f" {r['faiss recall']:.4f} | {r['same ids']:.0%} | {r['faiss b1']:.0f} | "
                f"{r['faiss b64']:.0f} | {r['ours b1'] / r['faiss b1']:.2f}x | "
                f"{r['ours b64'] / r['faiss b64']:.2f}x |"
            )
        table.append(line)
    sizes_text = ""
    if fx is not None:
        sizes_text = (
            " FAISS IndexIVFFlat given our centroids puts every row in the list we put it in"
            + (
                f" but {moved:,} (their squared distances to the two centroids differ by at "
                f"most {gap:.1e})"
                if moved
                else ""
            )
            + f"; its add took {faiss_add:.1f} s."
        )
    lines += [
        "",
        f"### Clustered rows: {args.n:,} x {args.dim}, {centres:,} centres, sigma {args.sigma}, "
        f"{args.lists} lists",
        "",
        f"`train_ivf` (k-means {ivf['iters']} iterations on {ivf['train_rows']:,} sampled rows, "
        f"every row assigned, the lists written and checksummed): **{ivf['seconds']:.1f} s**."
        + sizes_text
        + f" Our exact search: {exact_b1:.1f} q/s at batch 1, {exact_b64:.1f} q/s at batch "
        f"{args.batch}. Batch 1: {len(q1)} queries one at a time; batch {args.batch}: one call; "
        f"medians of {args.repeats} interleaved runs.",
        "",
        *table,
    ]
    if hit is not None:
        verdict = (
            f"First nprobe with recall@10 >= 0.95: **{hit['nprobe']}** (recall "
            f"{hit['recall']:.4f}): batch 1 at {hit['ours b1'] / exact_b1:.1f}x our exact search's "
            f"batch-1 q/s (goal >= 5x)"
        )
        if fx is not None:
            verdict += (
                f"; batch {args.batch} at {hit['ours b64'] / hit['faiss b64']:.2f}x FAISS "
                f"IVF's q/s at the same nprobe and lists (goal >= 1x)"
            )
        lines += [
            "",
            verdict
            + f". Default nprobe for {args.lists} lists: {default_nprobe(args.lists, args.n)}.",
        ]
        if fx is not None and hit["ours b64"] < hit["faiss b64"]:
            breakdown(s, q64, hit["nprobe"], args.repeats, lines)
    else:
        lines += ["", "No nprobe measured reached recall@10 0.95."]
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def row_major(s):
    """The row-major scan over ``s``'s lists and devices (one (query, chunk) pair a tile, one
    loop a device): the scan before list-major tiles, for ``--compare``."""
    from jaxparadigm.retrieval.dense.ivf_search import IVFSearcher

    ivf = s.index.ivf
    return IVFSearcher(
        ivf.centroids,
        ivf.offsets,
        ivf.ids,
        ivf.rows,
        devices=s.vectors.devices,
        tile_queries=1,
        scans=1,
        host_queries=0,  # every batch on the device, batch 1 included, as before the host scan
    )


def breakdown(s, q: np.ndarray, nprobe: int, repeats: int, lines) -> None:
    """Where our batch's time goes, medians: probe, then the host's list-major scan (a batch of
    up to ``host_queries``) or the host plan and the device's tiles, then the rest."""
    from jaxparadigm.retrieval.dense.ivf_host_scan import host_candidates

    ivf = s._ivf
    probed = ivf.probe(q, nprobe)
    head = f"Where our batch-{len(q)} time goes at nprobe {nprobe}"
    if len(q) <= ivf.host_queries:
        lists = np.unique(probed)
        read = int(np.sum(ivf.offsets[lists + 1] - ivf.offsets[lists])) * ivf.dim * 4
        tol = ivf.tie_bound(q)
        t = interleaved(
            {
                "probe": lambda: ivf.probe(q, nprobe),
                "scan": lambda: host_candidates(q, ivf._rows, ivf.offsets, probed, 10, tol),
                "all": lambda: ivf.search(q, 10, nprobe),
            },
            repeats,
        )
        rest = t["all"] - t["probe"] - t["scan"]
        lines.append(
            f"{head} (the host's list-major scan): {t['all'] * 1e3:.1f} ms = probe "
            f"{t['probe'] * 1e3:.1f} ms + scan {t['scan'] * 1e3:.1f} ms ({len(lists):,} distinct "
            f"lists, each read once: {read / 2**20:,.0f} MiB, {read / t['scan'] / 1e9:.1f} GB/s) "
            f"+ rescoring and the rest {rest * 1e3:.1f} ms. FAISS scans each query's lists on its "
            "own OpenMP thread."
        )
        return
    group = ivf.tile_queries(probed)
    t = interleaved(
        {
            "probe": lambda: ivf.probe(q, nprobe),
            "plan": lambda: ivf.plan(probed, group),
            "all": lambda: ivf.search(q, 10, nprobe),
        },
        repeats,
    )
    tiles = ivf.plan(probed, group)
    real = tiles.tile_chunk != ivf.empty_chunk
    chunk_reads = int(np.sum(real))
    pairs = int(np.sum(tiles.tile_query < len(q)))
    scanned = chunk_reads * ivf.chunk_rows * ivf.dim * 4
    rest = t["all"] - t["probe"] - t["plan"]
    lines.append(
        f"{head}: {t['all'] * 1e3:.1f} ms = probe "
        f"{t['probe'] * 1e3:.1f} ms + host plan {t['plan'] * 1e3:.1f} ms + scan and merge "
        f"{rest * 1e3:.1f} ms; the scan reads {chunk_reads:,} tiles of {ivf.chunk_rows} rows and "
        f"up to {group} queries ({pairs:,} (query, chunk) pairs; {scanned / 2**20:,.0f} MiB "
        f"read tile by tile, {scanned / max(rest, 1e-9) / 1e9:.1f} GB/s; "
        f"{len(np.unique(tiles.tile_chunk[real])):,} distinct chunks) in {ivf.scans} loop(s) a "
        "device. FAISS scans each query's lists on its own OpenMP thread."
    )


def pydoc_section(args, lines, curve) -> None:
    from pydoc_data.topics import topics

    from jaxparadigm.claims.evidence.pydoc_queries import PYDOC_QUERIES
    from jaxparadigm.retrieval.dense.ivf_search import default_nprobe
    from jaxparadigm.retrieval.encoder.sentence_encoder import load_minilm
    from jaxparadigm.retrieval.index.build import build_index
    from jaxparadigm.retrieval.index.ivf_build import train_ivf
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    encoder = load_minilm()
    tmp = Path(tempfile.mkdtemp(prefix="ivf_bench_pydoc_"))
    (tmp / "docs").mkdir()
    for name, text in topics.items():
        (tmp / "docs" / f"{name}.txt").write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    build_index([tmp / "docs"], tmp / "idx", encoder, chunk_tokens=args.pydoc_window, overlap=8)
    build_s = time.perf_counter() - t0
    n = IndexSearcher(tmp / "idx").source.rows
    lists = args.pydoc_lists or max(1, round(n / 40))
    train_ivf(tmp / "idx", lists, seed=0)
    s = IndexSearcher(tmp / "idx")
    q = np.asarray(encoder.encode([x.text for x in PYDOC_QUERIES]), np.float32)
    exact = s.search_vectors(q, 10).ids
    d = default_nprobe(lists, n)
    rows = []
    for p in sorted({v for v in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, d) if v <= lists}):
        rows.append((p, recall(s.search_vectors(q, 10, nprobe=p).ids, exact)))
    curve["pydoc"] = [{"nprobe": p, "recall": r} for p, r in rows]
    at_default = dict(rows)[d]
    lines += [
        "",
        f"### Real text: pydoc topics, {n:,} passages of {args.pydoc_window} tokens (MiniLM), "
        f"{lists} lists",
        "",
        f"Built and encoded in {build_s:.0f} s; {len(PYDOC_QUERIES)} labelled queries, recall@10 "
        f"against our exact search. Default nprobe {d} of {lists}: recall@10 **{at_default:.4f}** "
        "(goal >= 0.95).",
        "",
        "| nprobe | " + " | ".join(str(p) for p, _ in rows) + " |",
        "|---|" + "---|" * len(rows),
        "| recall@10 | " + " | ".join(f"{r:.4f}" for _, r in rows) + " |",
    ]
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def plot(curve: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = curve.get("clustered")
    if not rows:
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for i, b in enumerate(("b1", "b64")):
        ax[i].plot(
            [r["recall"] for r in rows],
            [r[f"ours {b}"] for r in rows],
            "o-",
            label="jaxparadigm IVF",
        )
        if f"faiss {b}" in rows[0]:
            ax[i].plot(
                [r["faiss recall"] for r in rows],
                [r[f"faiss {b}"] for r in rows],
                "s--",
                label="FAISS IndexIVFFlat",
            )
        if "exact" in curve:
            ax[i].axhline(curve["exact"][b], color="gray", ls=":", label="jaxparadigm exact")
        for r in rows:
            ax[i].annotate(str(r["nprobe"]), (r["recall"], r[f"ours {b}"]), fontsize=7)
        ax[i].set_xlabel("recall@10")
        ax[i].set_ylabel("queries/s")
        ax[i].set_yscale("log")
        ax[i].set_title(f"batch {1 if b == 'b1' else 64}")
        ax[i].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--lists", type=int, default=256)
    parser.add_argument("--centres", type=int, default=0, help="default: 10 per list")
    parser.add_argument("--sigma", type=float, default=0.05)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--single", type=int, default=32, help="batch-1 queries timed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--nprobe", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--parts", nargs="+", default=["clustered"])
    parser.add_argument("--pydoc-window", type=int, default=64)
    parser.add_argument("--pydoc-lists", type=int, default=0, help="default: 40 rows per list")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also time the row-major scan (one (query, chunk) pair a tile, one loop: the scan "
        "before list-major tiles) in the same rounds, with after/before ratios and an equality check",
    )
    parser.add_argument("--results", help="append the section to this markdown file")
    parser.add_argument("--plot", help="write the recall/q/s curve to this PNG")
    parser.add_argument(
        "--full",
        action="store_true",
        help="RESULTS.md's size: --n 1000000 --lists 1024, both parts",
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(n=1_000_000, lists=1024, parts=["clustered", "pydoc"])
        args = parser.parse_args(argv)
    print(
        f"bench ivf: {'full' if args.full else 'quick'} size (--n {args.n:,} x {args.dim} rows, "
        f"--lists {args.lists}, parts {' '.join(args.parts)}); the full size of "
        "benchmarks/RESULTS.md: `jaxparadigm bench ivf --full` (1,000,000 rows, 1,024 lists, "
        "and the pydoc topics encoded by MiniLM: about 3 minutes on 2 cores, 12 GB at its peak)",
        flush=True,
    )
    import jax

    try:
        import faiss
    except ImportError:
        faiss = None
        print("faiss: not installed, its columns are left out (pip install -e '.[bench]')")
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    lines = [
        "## IVF search: recall@10 vs q/s against exact and FAISS IndexIVFFlat (issue 38)",
        "",
        f"`jaxparadigm bench ivf {' '.join(argv if argv is not None else sys.argv[1:])}`. "
        f"{cpu_info()}. jax {jax.__version__}"
        + (
            f", faiss-cpu {faiss.__version__} ({faiss.omp_get_max_threads()} threads)"
            if faiss
            else ", FAISS not installed"
        )
        + f". 1-minute load average {load0:.2f} at the start.",
    ]
    curve: dict = {}
    if "clustered" in args.parts:
        print(f"clustered: {args.n:,} x {args.dim} rows, {args.lists} lists ...", flush=True)
        clustered_section(args, lines, faiss, curve)
    if "pydoc" in args.parts:
        print("pydoc: building the MiniLM index of the pydoc topics ...", flush=True)
        pydoc_section(args, lines, curve)
    lines += [
        "",
        f"1-minute load average {os.getloadavg()[0]:.2f} at the end; whole run "
        f"{time.perf_counter() - t0:.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.results:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    if args.plot:
        plot(curve, args.plot)
    return {"text": text, "curve": curve}


if __name__ == "__main__":
    main()
