"""Where a served request's CPU goes, and what that allows at 16 clients (issue 49, C5.2).

    python benchmarks/serve_budget.py [--clients 1,16] [--seconds S] [--rounds R] [--calls N]
                                      [--keep-alive] [--cache-dir DIR] [--out FILE]

The pydoc index of ``serve_bench.py`` (built once, cached), served as ``bench serve`` serves it
(dense, exact, no excerpts), one process for the service and one for the clients. Measured, one
part at a time on the same machine:

1. **encode alone**: the service's own batch encode (``request_batcher.embed``: packed rows for
   several queries) of ``B`` random questions, ``B`` in 1, 2, 4, 8, 16; wall and process CPU ms a
   call (median of ``--rounds`` rounds of ``--calls`` calls) on every core, and again in a child
   process bound to one core (``os.sched_setaffinity`` before JAX starts);
2. **the service without the model**: the same service with a lookup encoder (MiniLM's tokenizer
   and checks; each query's row computed once by MiniLM beforehand, then looked up): q/s and CPU ms
   a request of the server and of the client process per client count: the cost of HTTP, JSON,
   spans, tokenizing, batching and the search;
3. **the service**: q/s, CPU ms a request, mean batch and mean encode span per client count.

Derived (printed beside the figures they come from): the contention factor (the encode span under
load over the encode alone at the nearest batch size), and the q/s the two cores would allow at 16
clients if the parts overlapped perfectly with no contention:

    q/s bound = cores / (encode CPU a query at batch B + service CPU a request + client CPU),

with the encode's CPU on every core (spinning threads counted) and on one core (its compute
alone), at the measured mean batch and at batch 16. Their ratio to one client's q/s is the most
the ``16 clients >= 2.5x one`` goal can get from this encoder and this service code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_bench as sb  # noqa: E402
from index_bench import cpu_info  # noqa: E402

BATCHES = (1, 2, 4, 8, 16)


def encode_costs(rounds: int, calls: int = 30) -> dict[int, dict[str, float]]:
    """``{B: {"wall_ms", "cpu_ms"}}`` of one packed batch encode of ``B`` random questions
    (medians of ``rounds`` rounds of ``calls`` calls; every shape compiled first)."""
    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm
    from jaxparadigm.retrieval.service.request_batcher import embed

    encoder, rng = cached_minilm(None), np.random.default_rng(0)
    draws = {b: [list(rng.choice(sb.QUESTIONS, b)) for _ in range(calls)] for b in BATCHES}
    tokens = {b: [encoder.token_ids(d) for d in ds] for b, ds in draws.items()}
    for b in BATCHES:  # compile every packed shape these draws need
        for texts, ids in zip(draws[b], tokens[b], strict=True):
            embed(encoder, texts, ids)
    got: dict[int, dict[str, list[float]]] = {b: {"wall_ms": [], "cpu_ms": []} for b in BATCHES}
    for _ in range(rounds):
        for b in BATCHES:
            cpu0, t0 = sb.process_cpu_s(), time.perf_counter()
            for texts, ids in zip(draws[b], tokens[b], strict=True):
                embed(encoder, texts, ids)
            got[b]["wall_ms"].append((time.perf_counter() - t0) * 1e3 / calls)
            got[b]["cpu_ms"].append((sb.process_cpu_s() - cpu0) * 1e3 / calls)
    return {b: {k: statistics.median(v) for k, v in d.items()} for b, d in got.items()}


def encode_costs_one_core(rounds: int, calls: int) -> dict[int, dict[str, float]]:
    """:func:`encode_costs` in a child process bound to one core."""
    cmd = [sys.executable, __file__, "--encode-one-core", str(rounds), str(calls)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800)
    return {int(b): v for b, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


class LookupEncoder:
    """MiniLM's tokenizer and checks; ``encode_token_ids`` looks each query's row up (rows made
    by MiniLM beforehand, :meth:`learn`): the service's cost without the model's."""

    def __init__(self, encoder) -> None:
        self.encoder, self.rows = encoder, {}
        self.dim, self.max_seq_length = encoder.dim, encoder.max_seq_length

    def __getattr__(self, name: str):
        return getattr(self.encoder, name)

    def learn(self, texts: list[str]) -> None:
        for ids in self.encoder.token_ids(texts):
            self.row(ids)

    def row(self, ids) -> np.ndarray:
        key = tuple(ids)
        if key not in self.rows:  # warm-up and learn() only: the timed load's rows are known
            self.rows[key] = self.encoder.encode_token_ids([list(ids)], normalize=True)[0]
        return self.rows[key]

    def encode_token_ids(self, ids, normalize: bool = True, **_: object) -> np.ndarray:
        del normalize  # the rows are normalised already
        return np.stack([self.row(t) for t in ids])


def serve_costs(folder: Path, encoder, args, clients: list[int]) -> dict[int, dict]:
    """Per client count: q/s, server and client CPU ms a request, mean batch, mean encode span."""
    from opentelemetry.trace import SpanKind

    service = sb.start_ours(folder, encoder, args)
    port = int(service.url.rsplit(":", 1)[1].split("/")[0])
    out = {}
    try:
        if not isinstance(encoder, LookupEncoder):
            sb.warm_ours(service)
        sb.warm(port, clients, args.keep_alive)
        for c in clients:
            service.exporter.clear()
            cpu0 = sb.process_cpu_s()
            records, wall, client_cpu = sb.drive_apart(
                port, c, args.seconds, "budget", args.keep_alive
            )
            row = sb.figures(records, wall, sb.process_cpu_s() - cpu0, client_cpu)
            # every encode span ended before its answer was sent; a batch's requests record
            # the same span times, so one entry per batch (mean batch: answers / batches)
            spans = [s for s in service.exported_spans() if s.kind != SpanKind.SERVER]
            encodes = {s.start_time: s.end_time - s.start_time for s in spans if s.name == "encode"}
            row["batches"] = len(encodes)
            row["mean_batch"] = (len(records) - row["errors"]) / max(len(encodes), 1)
            row["encode_ms"] = float(np.mean(list(encodes.values()))) / 1e6 if encodes else 0.0
            out[c] = row
            service.exporter.clear()
    finally:
        service.stop()
    return out


def nearest(costs: dict[int, dict[str, float]], batch: float) -> int:
    return min(costs, key=lambda b: abs(b - batch))


def report(enc: dict, enc1: dict, lookup: dict, real: dict, cores: int, top: int) -> list[str]:
    lines = [
        "| batch B | encode wall ms | CPU ms | CPU ms/query | one core: wall ms | CPU ms/query |"
    ]
    lines.append("|---|---|---|---|---|---|")
    for b in BATCHES:
        e, o = enc[b], enc1[b]
        lines.append(
            f"| {b} | {e['wall_ms']:.2f} | {e['cpu_ms']:.2f} | {e['cpu_ms'] / b:.2f} | "
            f"{o['wall_ms']:.2f} | {o['cpu_ms'] / b:.2f} |"
        )
    lines += ["", "| service | clients | q/s | p50 ms | CPU ms/request server + client | mean "]
    lines[-1] += "batch | encode span ms |"
    lines.append("|---|---|---|---|---|---|---|")
    for name, rows in (("lookup encoder (no model)", lookup), ("MiniLM", real)):
        for c, r in rows.items():
            lines.append(
                f"| {name} | {c} | {r['qps']:.1f} | {r['p50_ms']:.1f} | {r['server_cpu_ms']:.2f} + "
                f"{r['client_cpu_ms']:.2f} | {r['mean_batch']:.2f} | {r['encode_ms']:.2f} |"
            )
    one, loaded = real[min(real)], real[top]
    b = nearest(enc, loaded["mean_batch"])
    svc = lookup[top]["server_cpu_ms"] + lookup[top]["client_cpu_ms"]
    lines += [
        "",
        f"Contention: at {top} clients a batch's encode span is {loaded['encode_ms']:.2f} ms "
        f"(mean batch {loaded['mean_batch']:.2f}); alone, batch {b} takes {enc[b]['wall_ms']:.2f} "
        f"ms on every core and {enc1[b]['wall_ms']:.2f} ms on one core: "
        f"{loaded['encode_ms'] / enc[b]['wall_ms']:.2f}x slower under load.",
    ]
    for label, batch in ((f"the mean batch {b}", b), (f"batch {BATCHES[-1]}", BATCHES[-1])):
        for where, costs in (("every core", enc), ("one core", enc1)):
            per_query = costs[batch]["cpu_ms"] / batch
            bound = cores * 1e3 / (per_query + svc)
            lines.append(
                f"Bound at {label}, encode CPU on {where}: {cores} cores / ({per_query:.2f} "
                f"+ {svc:.2f} ms) = {bound:.0f} q/s = {bound / one['qps']:.2f}x one client's "
                f"{one['qps']:.1f} q/s (measured at {top} clients: {loaded['qps']:.1f} q/s, "
                f"{loaded['qps'] / one['qps']:.2f}x)."
            )
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="1,16", help="client counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=8.0, help="load per client count")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the encode timing")
    parser.add_argument("--calls", type=int, default=30, help="encode calls a round and batch")
    parser.add_argument("--cache-dir", default=Path(tempfile.gettempdir(), "jaxparadigm-serve"))
    parser.add_argument("--topics", type=int, default=0, help="pydoc topics indexed (0: all)")
    parser.add_argument(
        "--keep-alive", action="store_true", help="each client keeps one connection open"
    )
    parser.add_argument("--out", help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    clients = [int(c) for c in str(args.clients).split(",")]
    args.batch_size = args.batch_wait_ms = None  # start_ours: the service's own batching
    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

    load0, t0 = os.getloadavg()[0], time.perf_counter()
    encoder = cached_minilm(None)
    (cache := Path(args.cache_dir)).mkdir(parents=True, exist_ok=True)
    folder = sb.tiny_index(cache, encoder, args.topics, 128)
    enc1 = encode_costs_one_core(args.rounds, args.calls)
    enc = encode_costs(args.rounds, args.calls)
    lookup = LookupEncoder(encoder)
    lookup.learn(sb.QUESTIONS)
    costs_lookup = serve_costs(folder, lookup, args, clients)
    costs_real = serve_costs(folder, encoder, args, clients)
    cores = len(os.sched_getaffinity(0))
    lines = report(enc, enc1, costs_lookup, costs_real, cores, max(clients))
    head = (
        f"`python benchmarks/serve_budget.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
        f". {cpu_info()}; {cores} usable cores; "
        + (
            "each client on one kept-alive connection"
            if args.keep_alive
            else "a connection a request"
        )
        + f". 1-minute load average {load0:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end; whole run {time.perf_counter() - t0:.0f} s."
    )
    print("\n".join(["## serve's CPU budget (issue 49)", "", head, "", *lines]))
    result = {"head": head, "encode": enc, "encode_one_core": enc1}
    result |= {"lookup": costs_lookup, "minilm": costs_real, "lines": lines}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--encode-one-core"]:  # the child of encode_costs_one_core
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(encode_costs(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
