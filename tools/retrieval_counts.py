"""Count, by measuring, the search engines behind ``search --index``/``serve`` and the index writers.

    python tools/retrieval_counts.py                 # before (/work/main) and after (this tree)
    python tools/retrieval_counts.py --tree DIR ...  # any source trees holding ``jaxparadigm``

Method (issue 33, item 2). For each tree a child process (``PYTHONPATH=DIR``) builds a tiny index
of three files with the real MiniLM and, under ``sys.setprofile``/``threading.setprofile``, runs:

* ``search``: ``jaxparadigm search QUERY --index DIR --top-k 3`` (the CLI's ``main``, in-process);
* ``serve``: ``serve_index(DIR)`` in a thread, one HTTP ``POST /search`` with ``k = 2``;
* ``SemanticIndex.search``: the in-memory index over the same texts, ``top_k = 1``;
* writes: ``build_index``, ``add_to_index`` and ``SemanticIndex.save``.

An *engine* is a ``jaxparadigm`` module whose own code selects the top k: the nearest
``jaxparadigm`` frame above each call of ``argsort``, ``argpartition``, ``lexsort``, ``top_k`` or
``approx_max_k`` (numpy or ``jax.lax``). Each command uses its own ``k`` so that a jitted kernel
is traced (and so seen) again. A *writer* is a function that calls ``index_store.write_shard``
(its caller's module and name). Nothing is grepped; the counts are what ran.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

SELECTORS = {"argsort", "argpartition", "lexsort", "top_k", "approx_max_k"}
REPO = Path(__file__).resolve().parent.parent


def _owner(frame) -> str | None:
    """``module:function`` of the nearest ``jaxparadigm`` frame at or above ``frame``."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("jaxparadigm."):
            return f"{module}:{frame.f_code.co_qualname}"
        frame = frame.f_back
    return None


class Recorder:
    """Which jaxparadigm functions select top-k, and which call ``write_shard``, while active."""

    def __init__(self) -> None:
        self.selectors: set[str] = set()
        self.writers: set[str] = set()

    def __call__(self, frame, event, arg):
        if event == "c_call":
            name = getattr(arg, "__name__", "")
            if name in SELECTORS:
                where = _owner(frame)
                if where:
                    self.selectors.add(where)
        elif event == "call":
            name = frame.f_code.co_name
            module = frame.f_globals.get("__name__", "")
            if name in SELECTORS and not module.startswith("jaxparadigm."):
                where = _owner(frame.f_back)
                if where:
                    self.selectors.add(where)
            elif name == "write_shard" and module.startswith("jaxparadigm."):
                where = _owner(frame.f_back)
                if where:
                    self.writers.add(where)

    def __enter__(self) -> Recorder:
        sys.setprofile(self)
        threading.setprofile(self)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(None)
        threading.setprofile(None)


def _import_first(*names: str):
    """The first ``module:attribute`` that imports (the module moved between the trees)."""
    import importlib

    for name in names:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {names}")


def _serve_once(index_dir: Path, query: str, k: int) -> list:
    serve_index = _import_first(
        "jaxparadigm.app.serve_command:serve_index",
        "jaxparadigm.retrieval.index_service:serve_index",
    )
    lines: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    stop = threading.Event()
    thread = threading.Thread(
        target=serve_index, args=(index_dir,), kwargs={"out": Out(), "stop": stop}
    )
    thread.start()
    deadline = time.monotonic() + 300
    while not any(" at http" in line for line in lines):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"serve did not start: {lines}")
        time.sleep(0.1)
    url = next(line for line in lines if " at http" in line).split(" at ")[1].split()[0]
    body = json.dumps({"query": query, "k": k}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        hits = json.loads(answer.read())["hits"]
    stop.set()
    thread.join()
    return hits


def measure() -> dict:
    """Run the commands of the module docstring in this process; what ran (see the docstring)."""
    import contextlib
    import io

    from jaxparadigm.cli import main
    from jaxparadigm.retrieval import SemanticIndex, add_to_index, build_index
    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

    encoder = cached_minilm(None)
    docs = [
        "Open a file and read its lines.",
        "Sleep for a few seconds.",
        "Sort a list of numbers.",
    ]
    out: dict = {"tree": str(Path(sys.modules["jaxparadigm"].__file__).parent.parent)}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "docs")
        src.mkdir()
        for i, text in enumerate(docs[:2]):
            Path(src, f"{i}.txt").write_text(text)
        more = Path(tmp, "more.txt")
        more.write_text(docs[2])
        index_dir = Path(tmp, "index")
        with Recorder() as rec:
            build_index([src], index_dir, encoder, shard_rows=2)
            add_to_index(index_dir, [more], encoder)
            SemanticIndex(encoder).add(docs).save(Path(tmp, "saved"))
        out["writers"] = sorted(rec.writers)
        with Recorder() as rec, contextlib.redirect_stdout(io.StringIO()):
            main(["search", "wait a moment", "--index", str(index_dir), "--top-k", "3"])
        out["search --index"] = sorted(rec.selectors)
        with Recorder() as rec:
            _serve_once(index_dir, "wait a moment", 2)
        out["serve"] = sorted(rec.selectors)
        with Recorder() as rec:
            SemanticIndex(encoder).add(docs).search("wait a moment", 1)
        out["SemanticIndex.search"] = sorted(rec.selectors)
    return out


def report(result: dict) -> str:
    commands = ("search --index", "serve", "SemanticIndex.search")
    lines = [f"tree: {result['tree']}"]
    engines: set[str] = set()
    for command in commands:
        modules = sorted({f.split(":")[0] for f in result[command]})
        engines |= set(modules)
        lines.append(f"  {command}: top-k selected in {', '.join(modules)}")
        lines += [f"      {f}" for f in result[command]]
    lines.append(
        f"  engines behind search/serve/SemanticIndex: {len(engines)} ({', '.join(sorted(engines))})"
    )
    lines.append(f"  writers (functions calling write_shard): {len(result['writers'])}")
    lines += [f"      {f}" for f in result["writers"]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", action="append", help="a source tree (default: /work/main, this one)"
    )
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure()))
        return 0
    for tree in args.tree or ["/work/main", str(REPO)]:
        env = {**os.environ, "PYTHONPATH": tree}
        run = subprocess.run(
            [sys.executable, __file__, "--measure"], env=env, capture_output=True, text=True
        )
        if run.returncode:
            print(f"tree {tree}: failed\n{run.stderr[-3000:]}", file=sys.stderr)
            return run.returncode
        result = json.loads(run.stdout.strip().splitlines()[-1])
        result["tree"] = f"{tree} ({result['tree']})"
        print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
