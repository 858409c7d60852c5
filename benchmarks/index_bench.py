"""Persistent index search vs FAISS, and encode speed options vs sentence-transformers (issue 15, C1.1).

    jaxparadigm bench index [--n 1000000] [--ann-n 200000] [--encode-n 512] [--results FILE]

1. Exact top-10 over ``n`` x 384 synthetic unit vectors: our index (shards written, checksummed,
   loaded, streamed through jitted matmul + ``lax.top_k``) vs FAISS ``IndexFlatIP``: queries/s at
   batch 64 and batch 1 (medians, the two interleaved in one process), identical top-10, build
   time, bytes per vector; our bfloat16/int8 modes (float32 rescoring) and ``--approx``, with
   recall@10 against exact.
2. Approximate search at matched recall@10 >= 0.95 on ``ann_n`` of those vectors: FAISS
   ``IndexIVFFlat`` (nprobe sweep) and ``IndexHNSWFlat`` (efSearch sweep) vs our exact and int8.
3. The real pydoc passages (MiniLM, ``index build`` defaults) with the 70 labelled queries: our
   exact top-10 vs FAISS flat, compact modes' recall@10.
4. Encode: sentence-transformers float32 vs ours float32 / bfloat16 / packed / both, sentences/s
   (interleaved medians), cosine to sentence-transformers and recall@5 of the pydoc evaluation.

FAISS (``pip install jaxparadigm[bench]``) and sentence-transformers are optional: a part whose
reference is missing prints that and measures ours alone. CPU model, flags (avx512_bf16, AMX) and
the 1-minute load average are printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_tile")


def cpu_info() -> str:
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model in ("", platform.machine()):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    have = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in FLAGS)
    return f"{model}, {os.cpu_count()} CPUs; {have}"


def unit_rows(n: int, dim: int, seed: int, chunk: int = 131072) -> np.ndarray:
    rng, out = np.random.default_rng(seed), np.empty((n, dim), np.float32)
    for a in range(0, n, chunk):
        x = rng.standard_normal((min(chunk, n - a), dim), dtype=np.float32)
        out[a : a + len(x)] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(fns: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each callable, run round-robin ``repeats`` times after one warm-up."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            times[k].append(timed(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def recall(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want, strict=True)]))


def agreement(x: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray) -> str:
    """Share of queries whose two top-k id lists are identical; where they differ, the largest
    float64 score gap between the two ids at the first differing rank (a tie or near tie when tiny)."""
    differ = np.flatnonzero(~np.all(a == b, axis=1))
    text = f"{1 - len(differ) / len(a):.0%} of {len(a)} queries"
    if len(differ):
        gaps = []
        for i in differ:
            p = int(np.argmax(a[i] != b[i]))
            qi = q[i].astype(np.float64)
            gaps.append(
                abs(x[a[i, p]].astype(np.float64) @ qi - x[b[i, p]].astype(np.float64) @ qi)
            )
        text += f" (where they differ, score gap at the first differing rank <= {max(gaps):.1e})"
    return text


def write_vector_index(out: Path, x: np.ndarray, shard_rows: int) -> None:
    """Synthetic vectors as an index directory (passages: empty placeholders)."""
    from jaxparadigm.retrieval.documents.passages import Passage
    from jaxparadigm.retrieval.index.store import new_manifest, write_manifest, write_shard

    out.mkdir(parents=True)
    build = {"chunk_tokens": 2, "overlap": 0, "batch_size": 1}  # a valid manifest: none used
    m = new_manifest(
        {"name": "synthetic", "dim": x.shape[1], "max_seq_length": 1}, shard_rows, build
    )
    for j, a in enumerate(range(0, len(x), shard_rows)):
        rows = x[a : a + shard_rows]
        m["shards"].append(write_shard(out, j, rows, [Passage("synthetic", 0, 0, "")] * len(rows)))
        m["count"] += len(rows)
    m["status"], m["sources"] = "complete", [{"source": "synthetic", "passages": m["count"]}]
    write_manifest(out, m)


def exact_section(args, x, queries, lines, faiss) -> np.ndarray:
    from jaxparadigm.retrieval.dense.vector_search import VectorSearcher
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    q64, q1 = queries[: args.batch], queries[args.batch : args.batch + args.single]
    tmp = Path(tempfile.mkdtemp(prefix="index_bench_"))
    build_s = timed(lambda: write_vector_index(tmp / "idx", x, args.shard_rows))
    holder = {}
    load_s = timed(  # the rows are placed by the first search
        lambda: holder.setdefault(
            "s", IndexSearcher(tmp / "idx", block_rows=args.block)
        ).vectors.search(q1[:1], 10)
    )
    ours = holder["s"]
    disk = sum(p.stat().st_size for p in (tmp / "idx").glob("*.npy")) / len(x)
    fns = {"ours": lambda: ours.vectors.search(q64, 10)}
    rows = []
    if faiss is not None:
        flat = faiss.IndexFlatIP(x.shape[1])
        faiss_build = timed(lambda: flat.add(x))
        fns["faiss"] = lambda: flat.search(q64, 10)
    med64 = interleaved(fns, args.repeats)
    one_query = {"ours": lambda q: ours.vectors.search(q[None], 10)}
    if faiss is not None:
        one_query["faiss"] = lambda q: flat.search(q[None], 10)
    single = {k: [] for k in one_query}
    for fn in one_query.values():
        fn(q1[0])  # warm-up: compiles the batch-1 shapes
    for q in q1:  # batch 1, interleaved query by query
        for k, fn in one_query.items():
            single[k].append(timed(lambda fn=fn, q=q: fn(q)))
    exact = ours.vectors.search(q64, 10).ids
    brute = np.argsort(-(q64 @ x.T), axis=1)[:, :10]
    rows.append(
        (
            "ours exact float32",
            args.batch / med64["ours"],
            f"{1 / statistics.median(single['ours']):.1f}",
            1.0,
            f"{build_s:.1f} (write + sha256) + {load_s:.1f} (verify + place + a first search)",
            f"{disk:.0f} on disk, 1536 in memory",
        )
    )
    if faiss is not None:
        fids = flat.search(q64, 10)[1]
        same = agreement(x, q64, exact, fids)
        rows.append(
            (
                "FAISS IndexFlatIP",
                args.batch / med64["faiss"],
                f"{1 / statistics.median(single['faiss']):.1f}",
                recall(fids, exact),
                f"{faiss_build:.1f} (add)",
                "1536 in memory",
            )
        )
        ratio64 = med64["faiss"] / med64["ours"]
        ratio1 = statistics.median(single["faiss"]) / statistics.median(single["ours"])
    for dtype in ("bfloat16", "int8"):
        t0 = time.perf_counter()
        s = VectorSearcher(ours.source, dtype=dtype, block_rows=args.block)
        place_s = time.perf_counter() - t0
        m = interleaved({"m": lambda s=s: s.search(q64, 10)}, args.repeats)["m"]
        s.search(q1[:1], 10)  # warm-up
        one = statistics.median(timed(lambda s=s, q=q: s.search(q[None], 10)) for q in q1)
        rows.append(
            (
                f"ours {dtype} + float32 rescoring (x4)",
                args.batch / m,
                f"{1 / one:.1f}",
                recall(s.search(q64, 10).ids, exact),
                f"{place_s:.1f} (quantise + place)",
                f"{s.bytes_per_row} in memory (+1536 float32 on disk for rescoring)",
            )
        )
        del s
    m = interleaved({"m": lambda: ours.vectors.search(q64, 10, approx=True)}, args.repeats)["m"]
    rows.append(
        (
            "ours float32 --approx (approx_max_k, 0.95)",
            args.batch / m,
            "-",
            recall(ours.vectors.search(q64, 10, approx=True).ids, exact),
            "-",
            "1536",
        )
    )
    lines += [
        f"### Exact top-10 over {len(x):,} x {x.shape[1]} synthetic unit vectors",
        "",
        f"Shards of {args.shard_rows:,} rows, search blocks of {ours.vectors.block_rows:,} rows on "
        f"{len(ours.vectors.devices)} device(s); batch {args.batch} median of {args.repeats} "
        f"interleaved runs, batch 1 median of {len(q1)} interleaved queries.",
        "",
        f"| method | q/s batch {args.batch} | q/s batch 1 | recall@10 vs our exact | build s | "
        "bytes/vector |",
        "|---|---|---|---|---|---|",
        *(f"| {n} | {a:.1f} | {b} | {r:.4f} | {bs} | {by} |" for n, a, b, r, bs, by in rows),
        "",
        f"Our exact top-10 equals a numpy argsort of the float32 scores for "
        f"{np.mean(np.all(exact == brute, axis=1)):.0%} of the {args.batch} queries.",
    ]
    if faiss is not None:
        lines.append(
            f"Identical top-10 (ids in order) ours vs FAISS flat: {same}. Throughput "
            f"ratio ours / FAISS flat: batch {args.batch} {ratio64:.2f}x, batch 1 {ratio1:.2f}x."
        )
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return exact


def ann_section(args, x, queries, lines, faiss) -> None:
    from jaxparadigm.retrieval.dense.vector_search import RowSource, VectorSearcher

    x = x[: args.ann_n]
    q = queries[: args.batch]
    exact = np.argsort(-(q @ x.T), axis=1)[:, :10]
    rows = []
    for dtype in ("float32", "int8"):
        s = VectorSearcher(RowSource([x]), dtype=dtype, block_rows=args.block)
        m = interleaved({"m": lambda s=s: s.search(q, 10)}, args.repeats)["m"]
        rows.append(
            (
                f"ours {dtype}" + (" + rescoring" if dtype != "float32" else " exact"),
                "-",
                recall(s.search(q, 10).ids, exact),
                args.batch / m,
                "-",
            )
        )
    if faiss is None:
        lines += ["", "FAISS not installed: no IVF/HNSW rows."]
    else:
        for name, make, knob, values in (
            (
                "IndexIVFFlat nlist=1024",
                lambda: _ivf(faiss, x),
                "nprobe",
                (1, 4, 16, 32, 64, 128, 256, 512, 1024),
            ),
            (
                "IndexHNSWFlat M=32",
                lambda: _hnsw(faiss, x),
                "efSearch",
                (16, 32, 64, 128, 256, 512, 1024, 2048),
            ),
        ):
            t0 = time.perf_counter()
            index = make()
            build = time.perf_counter() - t0
            for v in values:
                setattr(index if knob == "nprobe" else index.hnsw, knob, v)
                r = recall(index.search(q, 10)[1], exact)
                if r >= 0.95 or v == values[-1]:
                    break
            m = interleaved({"m": lambda index=index: index.search(q, 10)}, args.repeats)["m"]
            rows.append((f"FAISS {name}", f"{knob}={v}", r, args.batch / m, f"{build:.1f}"))
    lines += [
        "",
        f"### Approximate search at recall@10 >= 0.95 ({len(x):,} of those vectors, batch {args.batch})",
        "",
        "| method | setting (first reaching 0.95) | recall@10 | q/s | build s |",
        "|---|---|---|---|---|",
        *(f"| {n} | {k} | {r:.4f} | {qs:.1f} | {b} |" for n, k, r, qs, b in rows),
    ]


def _ivf(faiss, x):
    quant = faiss.IndexFlatIP(x.shape[1])
    index = faiss.IndexIVFFlat(quant, x.shape[1], 1024, faiss.METRIC_INNER_PRODUCT)
    index.train(x[: 64 * 1024])
    index.add(x)
    return index


def _hnsw(faiss, x):
    index = faiss.IndexHNSWFlat(x.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.add(x)
    return index


def pydoc_section(args, lines, faiss, encoder) -> None:
    from pydoc_data.topics import topics

    from jaxparadigm.claims.evidence.pydoc_queries import PYDOC_QUERIES
    from jaxparadigm.retrieval.dense.vector_search import VectorSearcher
    from jaxparadigm.retrieval.index.build import build_index
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    tmp = Path(tempfile.mkdtemp(prefix="index_bench_pydoc_"))
    (tmp / "docs").mkdir()
    for name, text in topics.items():
        if not args.topics or name in args.topics:
            (tmp / "docs" / f"{name}.txt").write_text(text, encoding="utf-8")
    build_s = timed(lambda: build_index([tmp / "docs"], tmp / "idx", encoder))
    searcher = IndexSearcher(tmp / "idx")
    labelled = [x for x in PYDOC_QUERIES if not args.topics or set(x.targets) & set(args.topics)]
    q = encoder.encode([x.text for x in labelled])
    exact = searcher.vectors.search(q, 10)
    topic = [[Path(searcher.passage(int(r)).source).stem for r in row[:5]] for row in exact.ids]
    hit5 = np.mean([bool(set(t) & set(x.targets)) for t, x in zip(topic, labelled, strict=True)])
    parts = [
        f"{len(searcher):,} passages (254-token windows, overlap 32) of "
        f"{len(args.topics) or 79} pydoc topics, built "
        f"and encoded in {build_s:.0f} s; {len(labelled)} labelled queries: a labelled topic "
        f"is among the top-5 passages' sources for {hit5:.1%} of them (exact search)."
    ]
    if faiss is not None:
        flat = faiss.IndexFlatIP(q.shape[1])
        x = searcher.source.take(0, len(searcher))
        flat.add(x)
        fids = flat.search(q, exact.ids.shape[1])[1]
        parts.append(f"Identical top-10 ours vs FAISS flat: {agreement(x, q, exact.ids, fids)}.")
    for dtype in ("bfloat16", "int8"):
        got = VectorSearcher(searcher.source, dtype=dtype).search(q, 10)
        alone = VectorSearcher(searcher.source, dtype=dtype).search(q, 10, rescore_factor=1)
        parts.append(
            f"{dtype}: recall@10 vs exact {recall(got.ids, exact.ids):.4f} with float32 rescoring "
            f"of 40 candidates, {recall(alone.ids, exact.ids):.4f} without."
        )
    lines += ["", "### Real pydoc passages (all-MiniLM-L6-v2)", "", " ".join(parts)]
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def encode_section(args, lines, base) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from retrieval_bench import _load_st, make_sentences

    from jaxparadigm.app.retrieval_task import (
        METHODS,
        pydoc_evaluation_set,
        semantic_rankings,
        summarize_ranks,
    )
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder
    from jaxparadigm.retrieval.eval.ranking_metrics import first_hit_rank

    sents = make_sentences(args.encode_n)
    st = _load_st()
    modes = {
        "ours float32": base,
        "ours bfloat16": SentenceEncoder(base.model, base.tokenizer, dtype="bfloat16"),
        "ours packed": SentenceEncoder(base.model, base.tokenizer, pack=True),
        "ours bfloat16 + packed": SentenceEncoder(
            base.model, base.tokenizer, dtype="bfloat16", pack=True
        ),
    }
    fns = {name: (lambda e=e: e.encode(sents, batch_size=32)) for name, e in modes.items()}
    if st is not None:
        fns = {"sentence-transformers float32": lambda: st.encode(sents, batch_size=32)} | fns
    med = interleaved(fns, args.repeats)
    ref = st.encode(sents, batch_size=32) if st is not None else base.encode(sents)
    names, texts, queries = pydoc_evaluation_set(tuple(args.topics))
    relevant = [{names.index(t) for t in x.targets if t in names} for x in queries]
    qtexts = [x.text for x in queries]
    rows = []
    for name, e in modes.items():
        emb = e.encode(sents, batch_size=32)
        cos = np.sum(emb * ref, axis=1)
        rankings, _ = semantic_rankings(e, texts, qtexts, args.chunk_words, 32)
        r5 = [
            summarize_ranks(
                [first_hit_rank(r, rel) for r, rel in zip(rankings[m], relevant, strict=True)]
            )["recall@5"]
            for m in METHODS[2:]
        ]
        rows.append((name, args.encode_n / med[name], cos.min(), cos.mean(), *r5))
    ref_name = "sentence-transformers float32" if st is not None else "ours float32"
    lines += [
        "",
        f"### Encode: {args.encode_n} sentences of 5-60 words, batch 32 (median of {args.repeats} interleaved runs)",
        "",
        f"| implementation | sent/s | vs {ref_name} | min cos to it | mean cos | recall@5 first 256 tokens | recall@5 passages |",
        "|---|---|---|---|---|---|---|",
    ]
    if st is not None:
        lines.append(
            f"| sentence-transformers float32 | {args.encode_n / med[ref_name]:.1f} | 1.00x | 1 | 1 | - | - |"
        )
    for name, sps, cmin, cmean, r_whole, r_pass in rows:
        lines.append(
            f"| {name} | {sps:.1f} | {sps / (args.encode_n / med[ref_name]):.2f}x | {cmin:.6f} | "
            f"{cmean:.6f} | {r_whole:.3f} | {r_pass:.3f} |"
        )
    base_r = rows[0]
    change = "; ".join(
        f"{n}: {rw - base_r[4]:+.3f} / {rp - base_r[5]:+.3f}" for n, _, _, _, rw, rp in rows[1:]
    )
    lines.append(
        f"Recall@5 change vs ours float32 (first 256 tokens / passages of {args.chunk_words} words,"
        f" {len(queries)} labelled pydoc queries): {change}."
    )


def _progress(t0: float, what: str) -> None:
    """One line as a part starts (the figures are printed together at the end)."""
    print(f"[{time.perf_counter() - t0:5.0f} s] {what} ...", flush=True)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--single", type=int, default=16, help="batch-1 queries timed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shard-rows", type=int, default=131072)
    parser.add_argument("--block", type=int, default=8192, help="rows per jitted matmul + top_k")
    parser.add_argument("--ann-n", type=int, default=20_000)
    parser.add_argument("--encode-n", type=int, default=512)
    parser.add_argument("--chunk-words", type=int, default=100)
    parser.add_argument("--topics", nargs="*", default=[], help="pydoc topics (default: all)")
    parser.add_argument("--parts", nargs="+", default=["exact", "ann"])
    parser.add_argument("--results", help="append the section to this markdown file")
    parser.add_argument(
        "--full",
        action="store_true",
        help="RESULTS.md's size: --n 1000000 --ann-n 200000 --parts exact ann pydoc encode",
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(n=1_000_000, ann_n=200_000, parts=["exact", "ann", "pydoc", "encode"])
        args = parser.parse_args(argv)
    print(
        f"bench index: {'full' if args.full else 'quick'} size (--n {args.n:,} x {args.dim} "
        f"vectors, {args.n * args.dim * 4 / 2**20:,.0f} MiB of float32, --ann-n {args.ann_n:,}, "
        f"parts {' '.join(args.parts)}); the full size of benchmarks/RESULTS.md: "
        "`jaxparadigm bench index --full` (1,000,000 vectors and the pydoc and encode parts: "
        "15+ minutes on 2 cores, about 10 GB of memory at its peak)",
        flush=True,
    )

    import jax

    try:
        import faiss
    except ImportError:
        faiss = None
        print("faiss: not installed, its rows are left out (pip install -e '.[bench]')")
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    lines = [
        "## retrieval index and encode options (issue 15)",
        "",
        f"`jaxparadigm bench index` ({' '.join(argv or [])}). {cpu_info()}. jax {jax.__version__}"
        + (
            f", faiss-cpu {faiss.__version__} ({faiss.omp_get_max_threads()} threads)"
            if faiss
            else ", FAISS not installed"
        )
        + f". 1-minute load average {load0:.1f} at the start.",
        "",
    ]
    if {"exact", "ann"} & set(args.parts):
        x = unit_rows(args.n, args.dim, seed=0)
        queries = unit_rows(args.batch + args.single, args.dim, seed=1)
        if "exact" in args.parts:
            _progress(t0, f"exact top-10 over {args.n:,} vectors (build, load, search)")
            exact_section(args, x, queries, lines, faiss)
        if "ann" in args.parts:
            _progress(t0, f"approximate search on {args.ann_n:,} vectors")
            ann_section(args, x, queries, lines, faiss)
        del x
    if {"pydoc", "encode"} & set(args.parts):
        from jaxparadigm.retrieval.encoder.sentence_encoder import load_minilm

        base = load_minilm()
        if "pydoc" in args.parts:
            _progress(t0, "the pydoc passages with the labelled queries")
            pydoc_section(args, lines, faiss, base)
        if "encode" in args.parts:
            _progress(t0, f"encode speed on {args.encode_n} sentences")
            encode_section(args, lines, base)
    lines += [
        "",
        f"1-minute load average {os.getloadavg()[0]:.1f} at the end; whole run {time.perf_counter() - t0:.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.results:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return {"text": text}


if __name__ == "__main__":
    main()
