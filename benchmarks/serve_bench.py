"""Load test of ``jaxparadigm serve``: q/s, p50/p99 latency and trace completeness per client count,
beside a plain sentence-transformers + FAISS flat server (issue 37, C5.2).

    jaxparadigm bench serve [--full] [--clients 1,4,16] [--seconds S] [--batch-size B]
                            [--batch-wait-ms T] [--no-reference] [--keep-alive] [--out FILE.json]

Indexes (built once, cached under ``--cache-dir``): the pydoc topics in ``--window``-token MiniLM
passages; with ``--full`` also 1,000,000 generated unit rows (placeholder passages). The service
runs in this process (``index_service(...).start()``); ``C`` client threads post ``{"query": q,
"k": 10}`` for ``--seconds`` per ``C`` (q: 64 questions about Python, in turn), one connection per
request (or, with ``--keep-alive``, each client on one connection it asks the server to keep
alive), from a client process of their own (sharing this machine's cores with the servers, not
their GIL). Per ``C``: q/s (200 answers / wall time), p50/p99 latency, errors, the CPU ms per
answered request of the server process and of the client process, trace completeness (the share
of requests with exactly one SERVER span whose ``request.id`` is the ``X-Request-Id`` sent and
whose trace holds ended parse, tokenize, encode and search spans, queue too when there). The reference, a stdlib ``ThreadingHTTPServer``
running ``SentenceTransformer.encode`` and ``faiss.IndexFlatIP.search`` over the same rows, takes
turns with ours per ``C``. CPU model, flags and load averages are printed with the figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_bench import cpu_info, unit_rows, write_vector_index  # noqa: E402

HOST = "127.0.0.1"
REQUIRED_SPANS = {"parse", "tokenize", "encode", "search"}
TABLE_HEAD = (
    "| index | rows | server | clients | requests | q/s | p50 ms | p99 ms | errors | trace "
    "complete | mean batch | CPU ms/request server + client |"
)
#: 64 questions a user might ask of the Python docs (each ends with its only "?")
QUESTIONS = [
    " ".join(q.split()) + "?"
    for q in """
How do I format a float with two decimal places in an f-string? What does the with statement do
with a context manager? How do I catch several exceptions in one except clause? What is the
difference between is and == in Python? How does a for loop get items from an iterator? What does
the yield keyword do inside a function? How do I define a class with its own __init__ method? What
is the order of operator precedence in Python? How do slices with negative indices work on a list?
What does the global statement do inside a function? How do I use nonlocal in a nested function?
What does assert do and when is it skipped? When are default argument values evaluated? What can a
lambda expression contain? How do I raise an exception from another exception? What does the pass
statement do? How does try/finally behave when the try block returns? How do relative imports work
inside a package? How are tuples and lists compared with < and ==? How does += work on a mutable
object like a list? What does del do to a name or a list item? How do I write a conditional
expression on one line? Which string prefixes exist, like raw strings and bytes literals? How do I
declare keyword-only arguments? What do *args and **kwargs mean in a function call? How are
hexadecimal, octal and binary integer literals written? Which special method makes an object
callable? How do __getattr__ and __getattribute__ differ? How do descriptors with __get__ and
__set__ work? What must __hash__ and __eq__ satisfy for dictionary keys? What does __slots__ do in
a class definition? How do I implement iteration with __iter__ and __next__? When does the else
clause of a while loop run? How do break and continue behave in nested loops? What is the
difference between a list comprehension and a generator expression? How do I write a dictionary
comprehension? What does await do inside a coroutine? How does async with work for asynchronous
context managers? Which values are false: empty containers, zero, None? How does the and operator
short-circuit? What does the in operator test for sequences and dictionaries? How do I write a
decorator for a function? How do I pad and align text with the format specification mini-language?
How do rich comparison methods like __lt__ work? What does the match statement do with case
patterns? How are names resolved in nested scopes and closures? What is the difference between
bytes and bytearray? How do I swap two variables in one assignment? What does a metaclass control
when a class is created? How do floor division and modulo behave for negative numbers? Why should I
compare with None using is? What does return do inside a generator? How do I use the walrus
operator := in a while loop? What are Ellipsis and NotImplemented used for? Which operations do
sets support, such as union and intersection? What does the power operator ** return for a negative
exponent? What should __enter__ and __exit__ return? How is __repr__ different from __str__? How
does a starred target like first, *rest = items work? What happens when a module is imported a
second time? How do I write a string over several lines with triple quotes? What does from
__future__ import annotations change? Which methods make a class behave like a container with len()
and indexing? What does an exception's traceback hold?
""".split("?")
    if q.strip()
]


def tiny_index(cache: Path, encoder, topics: int, window: int) -> Path:
    """The pydoc topics (the first ``topics`` of them, 0: all) as a MiniLM index, built once."""
    from jaxparadigm.retrieval.eval.pydoc_corpus import pydoc_topics
    from jaxparadigm.retrieval.index.build import build_index

    names = list(pydoc_topics())[: topics or None]
    out = cache / f"pydoc-py{sys.version.split()[0]}-{len(names)}topics-w{window}"
    if (out / "manifest.json").is_file():
        return out
    work = cache / f"{out.name}.tmp{os.getpid()}"
    (work / "docs").mkdir(parents=True)
    for name in names:
        (work / "docs" / f"{name}.txt").write_text(pydoc_topics()[name], encoding="utf-8")
    build_index([work / "docs"], work / "idx", encoder, chunk_tokens=window, overlap=window // 8)
    (work / "idx").rename(out)
    return out


def generated_index(cache: Path, n: int, encoder) -> Path:
    """``n`` generated unit rows (placeholder passages) with MiniLM's model entry, written once."""
    from jaxparadigm.retrieval.index.build import DEFAULT_MODEL_NAME
    from jaxparadigm.retrieval.index.store import read_manifest, write_manifest

    out = cache / f"generated-{n}"
    if (out / "manifest.json").is_file():
        return out
    work = cache / f"{out.name}.tmp{os.getpid()}"
    write_vector_index(work, unit_rows(n, encoder.dim, seed=0), shard_rows=131072)
    m = read_manifest(work)  # served with MiniLM queries: the model entry must be MiniLM's
    m["model"] |= {"name": DEFAULT_MODEL_NAME, "max_seq_length": encoder.max_seq_length}
    write_manifest(work, m)
    work.rename(out)
    return out


def post(
    port: int, query: str, rid: str, conn: http.client.HTTPConnection | None = None
) -> tuple[int, float]:
    """One ``POST /search``: (status, 0 when no answer; seconds). On a new connection, closed
    after the answer; or on ``conn``, asking the server to keep it alive (``--keep-alive``; it
    reconnects by itself when the server closed it)."""
    body = json.dumps({"query": query, "k": 10}).encode()
    headers = {"Content-Type": "application/json", "X-Request-Id": rid}
    if conn is not None:
        headers["Connection"] = "keep-alive"
    t0, status = time.perf_counter(), 0
    this = conn or http.client.HTTPConnection(HOST, port, timeout=120)
    try:
        this.request("POST", "/search", body, headers)
        resp = this.getresponse()
        resp.read()
        status = resp.status
    except OSError:
        this.close()  # a kept connection the server closed: the next request reconnects
    if conn is None:
        this.close()
    return status, time.perf_counter() - t0


def drive_apart(
    port: int, clients: int, seconds: float, tag: str, keep_alive: bool = False
) -> tuple[list, float, float]:
    """:func:`drive` in a client process of its own (python's GIL and the servers' threads
    apart): ``python serve_bench.py --drive PORT C S TAG KEEP_ALIVE``."""
    cmd = [sys.executable, __file__, "--drive", str(port), str(clients), str(seconds), tag]
    cmd.append(str(int(keep_alive)))
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 300)
    got = json.loads(out.stdout)
    return [tuple(r) for r in got["records"]], got["wall"], got["cpu_s"]


def drive(
    port: int, clients: int, seconds: float, tag: str, keep_alive: bool = False
) -> tuple[list, float, float]:
    """``clients`` threads posting until ``seconds`` have passed: [(rid, status, s)], wall s,
    and the CPU seconds (user + system) this process spent meanwhile. ``keep_alive``: each
    thread posts on one connection of its own, kept open (:func:`post`)."""
    records: list[list] = [[] for _ in range(clients)]
    t0, cpu0 = time.perf_counter(), process_cpu_s()

    def client(j: int) -> None:
        i = 0
        conn = http.client.HTTPConnection(HOST, port, timeout=120) if keep_alive else None
        while time.perf_counter() < t0 + seconds:
            rid = f"{tag}-c{clients}-{j}-{i}"
            query = QUESTIONS[(j * 17 + i) % len(QUESTIONS)]
            records[j].append((rid, *post(port, query, rid, conn)))
            i += 1
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, args=(j,)) for j in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for rs in records for r in rs], time.perf_counter() - t0, process_cpu_s() - cpu0


def process_cpu_s() -> float:
    """User + system CPU seconds of this process so far (every thread)."""
    t = os.times()
    return t.user + t.system


def trace_completeness(service, rids: list[str], wait_s: float = 5.0) -> tuple[float, float]:
    """Share of ``rids`` with one SERVER span whose trace holds the ended REQUIRED_SPANS (and
    ``queue``, when there, ended too), and the mean batch size their encode spans record (0 when
    none does); empties the service's span store."""
    from opentelemetry.trace import SpanKind

    deadline = time.monotonic() + wait_s
    while True:  # the server span ends just after the answer is sent
        spans, servers, traces = service.exported_spans(), defaultdict(list), defaultdict(list)
        for s in spans:
            if s.kind == SpanKind.SERVER:
                servers[s.attributes.get("request.id")].append(s)
            else:
                traces[s.context.trace_id].append(s)
        if set(rids) <= set(servers) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    ok, sizes = 0, []
    for rid in rids:
        found = servers.get(rid, [])
        if len(found) != 1 or found[0].end_time is None:
            continue
        kids = traces.get(found[0].context.trace_id, [])
        ok += REQUIRED_SPANS <= {k.name for k in kids} and all(k.end_time for k in kids)
        sizes += [k.attributes["batch.size"] for k in kids if "batch.size" in k.attributes][:1]
    service.exporter.clear()
    return ok / max(len(rids), 1), float(np.mean(sizes)) if sizes else 0.0


def figures(records: list, wall: float, server_cpu_s: float, client_cpu_s: float) -> dict:
    """q/s, p50/p99 ms, errors, and the CPU ms per answered request of the server process (the
    service and, for ours, nothing else running) and of the client process."""
    lat = np.array([s for _, status, s in records if status == 200] or [np.nan]) * 1e3
    p50, p99 = np.percentile(lat, [50, 99]).tolist()
    errors = sum(status != 200 for _, status, _ in records)
    answered = max(len(records) - errors, 1)
    return {
        "requests": len(records),
        "qps": (len(records) - errors) / wall,
        "p50_ms": p50,
        "p99_ms": p99,
        "errors": errors,
        "server_cpu_ms": 1e3 * server_cpu_s / answered,
        "client_cpu_ms": 1e3 * client_cpu_s / answered,
    }


def start_ours(index_dir: Path, encoder, args):
    """The service over ``index_dir``, started; ``--batch-size``/``--batch-wait-ms`` passed when
    given (its defaults otherwise), left out when this checkout's service has no batching."""
    from jaxparadigm.retrieval.service.index_service import index_service

    opts = {"max_batch": args.batch_size, "max_wait_ms": args.batch_wait_ms}
    opts = {k: v for k, v in opts.items() if v is not None}
    try:  # the dense engine alone, exact, no excerpts: what the reference (ST + FAISS flat) does
        from jaxparadigm.retrieval.search_options import SearchOptions
    except ImportError:  # a checkout before SearchOptions: its service ranked so by default
        pass
    else:
        opts["options"] = SearchOptions(mode="dense", nprobe=None, excerpts=False)
    try:
        service = index_service(index_dir, encoder=encoder, **opts)
    except TypeError as exc:
        if not opts or not any(k in str(exc) for k in opts):
            raise
        print(f"batching: not available in this checkout ({exc}); serving without it")
        service = index_service(index_dir, encoder=encoder)
    got = {k: getattr(service, k, None) for k in ("max_batch", "max_wait_ms")}
    args.batching = got if None not in got.values() else "not available"
    return service.start()


def warm_ours(service) -> None:
    """Compile what the load will use: the encoder at each row bucket (1-32 rows, the questions'
    lengths), each batch encoded as the service encodes one (``request_batcher.embed``: packed
    rows for several queries, whose shapes depend on which queries share a batch: consecutive
    questions and seeded random draws of them), and the k=10 search at each power-of-two batch
    (the service compiles k=5)."""
    try:
        from jaxparadigm.retrieval.service.request_batcher import embed
    except ImportError:  # a checkout before packed batches: the texts, as its batcher did
        embed = None
    encoder, rng = service.encoder, np.random.default_rng(0)
    rows = 1
    while rows <= 32:
        draws = [QUESTIONS[a : a + rows] for a in range(0, len(QUESTIONS), rows)]
        if rows > 1:  # every batch size up to this one: packed shapes follow the tokens
            sizes = range(rows // 2 + 1, min(rows, getattr(service, "max_batch", 16)) + 1)
            draws += [list(rng.choice(QUESTIONS, n)) for _ in range(24) for n in sizes]
        for texts in draws:
            if embed is None:
                encoder.encode(texts, normalize=True)
            else:
                embed(encoder, texts, encoder.token_ids(texts))
        service.index.search_vectors(np.zeros((rows, encoder.dim), np.float32), 10)
        rows *= 2


class _RefHandler(BaseHTTPRequestHandler):
    """The plain loop: encode with sentence-transformers, search with FAISS flat, answer."""

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        del format, args

    def do_POST(self):
        ref = self.server.ref  # type: ignore[attr-defined]
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        q = ref["model"].encode([req["query"]], normalize_embeddings=True)
        scores, ids = ref["flat"].search(np.asarray(q, np.float32), int(req.get("k", 10)))
        hits = [[int(i), float(s)] for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        payload = {"hits": hits, "passages": [ref["passages"][i] for i, _ in hits]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        for key, value in (("Content-Type", "application/json"), ("Content-Length", len(data))):
            self.send_header(key, str(value))
        self.end_headers()  # HTTP/1.0: the connection closes after the answer, as ours does
        self.wfile.write(data)


class _RefServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the stdlib's 5 resets clients at 16 concurrent ones


def start_reference(service, st_model, faiss):
    """The reference server over the rows and passages ``service`` serves."""
    n = len(service.index)
    flat = faiss.IndexFlatIP(service.encoder.dim)
    flat.add(service.index.source.take(0, n))
    server = _RefServer((HOST, 0), _RefHandler)
    passages = [service.index.passage(i)._asdict() for i in range(n)]
    server.ref = {"model": st_model, "flat": flat, "passages": passages}  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def warm(port: int, clients: list[int], keep_alive: bool = False) -> None:
    """Every question once, then 0.5 s at each client count."""
    for q in QUESTIONS:
        post(port, q, "warm")
    for c in clients:
        drive_apart(port, c, 0.5, "warm", keep_alive)


def measure(name: str, index_dir: Path, encoder, args, refs, rows: list) -> None:
    """Ours and (when there) the reference over ``index_dir``, taking turns per client count."""
    service = start_ours(index_dir, encoder, args)
    servers = {"ours": int(service.url.rsplit(":", 1)[1].split("/")[0])}
    ref = None if refs is None else start_reference(service, *refs)
    if ref is not None:
        servers["reference"] = ref.server_address[1]
    try:
        warm_ours(service)
        for port in servers.values():
            warm(port, args.clients, args.keep_alive)
        service.exporter.clear()
        for c in args.clients:
            for label, port in servers.items():
                print(f"  {name}: {label}, {c} client(s), {args.seconds:g} s ...", flush=True)
                cpu0 = process_cpu_s()
                records, wall, client_cpu = drive_apart(
                    port, c, args.seconds, label, args.keep_alive
                )
                server_cpu = process_cpu_s() - cpu0
                row = {"index": name, "rows": len(service.index), "server": label, "clients": c}
                row |= figures(records, wall, server_cpu, client_cpu)
                if label == "ours":
                    done = trace_completeness(service, [r[0] for r in records])
                    row["complete"], row["mean_batch"] = done
                rows.append(row)
    finally:
        service.stop()
        if ref is not None:
            ref.shutdown()
            ref.server_close()


def table(rows: list) -> tuple[list[str], dict]:
    """The markdown table, and q/s at 16 clients (else the most) / q/s at 1 per index and server."""
    lines = [TABLE_HEAD, "|---" * 12 + "|"]
    qps = {}
    for r in rows:
        done = f"{r['complete']:.3f} | {r['mean_batch']:.1f}" if "complete" in r else "- | -"
        lines.append(
            f"| {r['index']} | {r['rows']:,} | {r['server']} | {r['clients']} | {r['requests']} | "
            f"{r['qps']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['errors']} | {done} | "
            f"{r['server_cpu_ms']:.2f} + {r['client_cpu_ms']:.2f} |"
        )
        qps[r["index"], r["server"], r["clients"]] = r["qps"]
    ratios = {}
    for (index, server, c), one in qps.items():
        have = [k[2] for k in qps if k[:2] == (index, server)]
        top = 16 if 16 in have else max(have)
        if c == 1 and top > 1:
            ratios[f"{index} {server} q/s({top})/q/s(1)"] = qps[index, server, top] / max(one, 1e-9)
    text = "; ".join(f"{k}: {v:.2f}x" for k, v in ratios.items()) or "no 1-client run"
    return [*lines, "", f"Scaling (goal >= 4 at 16 clients): {text}."], ratios


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="1,4,16", help="client counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=6.0, help="load per client count")
    parser.add_argument("--batch-size", type=int, help="max_batch of the service (when it has it)")
    parser.add_argument("--batch-wait-ms", type=float, help="max_wait_ms of the service")
    parser.add_argument("--no-reference", action="store_true", help="leave the reference out")
    parser.add_argument(
        "--keep-alive", action="store_true", help="each client keeps one connection open"
    )
    parser.add_argument("--topics", type=int, default=0, help="pydoc topics indexed (0: all)")
    parser.add_argument("--window", type=int, default=128, help="pydoc passage tokens")
    parser.add_argument("--n", type=int, default=1_000_000, help="--full: generated rows")
    parser.add_argument("--cache-dir", default=Path(tempfile.gettempdir(), "jaxparadigm-serve"))
    parser.add_argument("--out", help="write the figures to this JSON file")
    parser.add_argument("--full", action="store_true", help="1,2,4,8,16,32 clients, 20 s, 1M rows")
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(clients="1,2,4,8,16,32", seconds=20.0)
        args = parser.parse_args(argv)
    args.clients = [int(c) for c in str(args.clients).split(",")]
    return args


def reference_parts(args) -> tuple:
    """(SentenceTransformer, faiss) for the reference and its versions, or (None, why)."""
    if args.no_reference:
        return None, "reference left out (--no-reference)"
    try:
        import faiss
        import sentence_transformers
        import torch
    except ImportError as exc:
        return None, f"reference left out ({exc}; pip install -e '.[bench]')"
    from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

    st = sentence_transformers.SentenceTransformer(str(minilm_path()), device="cpu")
    return (st, faiss), (
        f"reference: sentence-transformers {sentence_transformers.__version__}, torch "
        f"{torch.__version__} ({torch.get_num_threads()} threads), faiss-cpu {faiss.__version__}"
    )


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    print(
        f"bench serve: {'full' if args.full else 'quick'} size (the pydoc topics index, clients "
        f"{','.join(map(str, args.clients))}, {args.seconds:g} s each); the full size: `jaxparadigm "
        "bench serve --full` (clients 1-32, 20 s each, and a 1,000,000-row index too: 10 "
        "minutes on 2 cores, measured, with both indexes cached)",
        flush=True,
    )
    import jax

    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

    load0, t0 = os.getloadavg()[0], time.perf_counter()
    encoder = cached_minilm(None)
    refs, ref_text = reference_parts(args)
    print(ref_text, flush=True)
    (cache := Path(args.cache_dir)).mkdir(parents=True, exist_ok=True)
    indexes = {"pydoc": tiny_index(cache, encoder, args.topics, args.window)}
    if args.full:
        indexes["generated"] = generated_index(cache, args.n, encoder)
    rows: list = []
    for name, folder in indexes.items():
        print(f"{name}: serving {folder} ...", flush=True)
        measure(name, folder, encoder, args, refs, rows)
    lines, ratios = table(rows)
    head = (
        f"`jaxparadigm bench serve {' '.join(argv if argv is not None else sys.argv[1:])}`. "
        f"{cpu_info()}. jax {jax.__version__}; {ref_text}. Batching of ours: {args.batching}. "
        + (
            "Each client on one kept-alive connection"
            if args.keep_alive
            else "One connection per request"
        )
        + "; the clients are threads of one other process. 1-minute "
        f"load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; whole run "
        f"{time.perf_counter() - t0:.0f} s."
    )
    text = "\n".join(["## serve under load (issue 37, C5.2)", "", head, "", *lines]) + "\n"
    print(text)
    result = {"head": head, "rows": rows, "ratios": ratios, "batching": args.batching}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drive"]:  # a client process of drive_apart
        _, _, port, c, seconds, tag, keep_alive = sys.argv
        records, wall, cpu_s = drive(int(port), int(c), float(seconds), tag, keep_alive == "1")
        print(json.dumps({"records": records, "wall": wall, "cpu_s": cpu_s}))
    else:
        main()
