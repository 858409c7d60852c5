"""The index manifest's schema: a manifest is untrusted input, checked field by field (C1.1).

``check_manifest(m, path)`` raises one :class:`~jaxparadigm.errors.InputError` naming the first
field that is missing, of the wrong type or out of range (``field shards[1].sha256.passages``), or
returns ``None``. Shard names must match ``shard_NNNNN-<10 hex>``: a plain file name inside the
index folder (``../outside/secret`` or an absolute path is refused before any file is opened). The
fields::

    format, version                 "jaxparadigm-index", 1
    model                           {name: str, dim: int >= 1, max_seq_length: int >= 1}
    dtype                           "float32"
    shard_rows, count               int >= 1, int >= 0
    status                          "complete" (pending null) or "building" (pending an object)
    pending                         {plan_sha256: 64 hex, start_row: int, rows: int,
                                     base: optional {count, shards, sources, files}}
    build                           {chunk_tokens: int >= 2, overlap: int in [0, chunk_tokens - 1],
                                     batch_size: int >= 1, context (optional): "outline" (each
                                     passage encoded with its context, stored in its shard line;
                                     absent in indexes built before contexts or without them)}
    sources                         [{source: str, passages: int >= 1}]
    files (optional)                [{path: str, sha256: 64 hex}]
    skipped (optional)              [{path: str, reason: str, detail: str}] (the last build/add's)
    history (optional)              [{command: "build"|"add", at: str, paths: [str], passages: int
                                     >= 0, sources: int >= 0, skipped: [as above]}], one per build
                                     and add, oldest first (absent from older manifests;
                                     ``pending.base`` may hold the history an add started from)
    shards                          [{name, rows: int in [1, shard_rows], sha256: {embeddings,
                                     passages: 64 hex}}], all but the last full, rows summing to
                                    count
    ivf (optional)                  {name: ivf-<10 hex>, lists: int >= 1, seed: int >= 0, iters:
                                     int >= 0, train_rows: int >= 1, rows: int >= 0, seconds
                                     (optional): number >= 0, sha256: {centroids, offsets, ids,
                                     rows: 64 hex}} (``ivf_store``)
"""

from __future__ import annotations

import re
from pathlib import Path

from jaxparadigm.errors import InputError, short_repr

__all__ = ["check_manifest", "SHARD_NAME"]

SHARD_NAME = re.compile(r"shard_\d{5}-[0-9a-f]{10}")
IVF_NAME = re.compile(r"ivf-[0-9a-f]{10}")
HEX64 = re.compile(r"[0-9a-f]{64}")
BUILD_CONTEXT = re.compile(r"outline")


class _Checker:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, value, want: str):
        raise InputError(
            f"{self.path}: field {where}: got {short_repr(value)}, expected {want}; "
            "the manifest is damaged: restore it or rebuild the index"
        )

    def obj(self, where: str, value, keys: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            self.fail(where, value, f"an object with keys {list(keys)}")
        for key in keys:
            if key not in value:
                self.fail(f"{where}.{key}".lstrip("."), "(missing)", "the field to be present")
        return value

    def integer(self, where: str, value, lo: int, hi: int | None = None) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < lo
            or (hi is not None and value > hi)
        ):
            self.fail(where, value, f"an int >= {lo}" if hi is None else f"an int in [{lo}, {hi}]")
        return value

    def text(self, where: str, value, pattern: re.Pattern | None = None, what: str = "a string"):
        if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
            self.fail(where, value, what)
        return value

    def array(self, where: str, value) -> list:
        if not isinstance(value, list):
            self.fail(where, value, "a list")
        return value

    def shards(self, where: str, value, shard_rows: int, count: int) -> None:
        for i, s in enumerate(self.array(where, value)):
            at = f"{where}[{i}]"
            self.obj(at, s, ("name", "rows", "sha256"))
            self.text(f"{at}.name", s["name"], SHARD_NAME, "a file name shard_NNNNN-<10 hex>")
            self.integer(f"{at}.rows", s["rows"], 1, shard_rows)
            self.obj(f"{at}.sha256", s["sha256"], ("embeddings", "passages"))
            for kind in ("embeddings", "passages"):
                self.text(f"{at}.sha256.{kind}", s["sha256"][kind], HEX64, "64 hex digits")
        rows = [s["rows"] for s in value]
        if any(r != shard_rows for r in rows[:-1]) or sum(rows) != count:
            raise InputError(
                f"{self.path}: {where} rows {rows} do not add up to count={count} with "
                f"shard_rows={shard_rows}; the manifest is damaged"
            )

    def records(self, where: str, value, fields: dict) -> None:
        for i, r in enumerate(self.array(where, value)):
            self.obj(f"{where}[{i}]", r, tuple(fields))
            for key, (kind, lo) in fields.items():
                if kind is int:
                    self.integer(f"{where}[{i}].{key}", r[key], lo)
                else:
                    self.text(
                        f"{where}[{i}].{key}", r[key], lo, "64 hex digits" if lo else "a string"
                    )


SOURCE_FIELDS = {"source": (str, None), "passages": (int, 1)}
FILE_FIELDS = {"path": (str, None), "sha256": (str, HEX64)}
SKIPPED_FIELDS = {"path": (str, None), "reason": (str, None), "detail": (str, None)}
HISTORY_COMMAND = re.compile(r"build|add")


def _history(c: _Checker, where: str, value) -> None:
    """The ``history`` list: one record per build and add (module docstring)."""
    for i, h in enumerate(c.array(where, value)):
        at = f"{where}[{i}]"
        c.obj(at, h, ("command", "at", "paths", "passages", "sources", "skipped"))
        c.text(f"{at}.command", h["command"], HISTORY_COMMAND, "'build' or 'add'")
        c.text(f"{at}.at", h["at"])
        for j, p in enumerate(c.array(f"{at}.paths", h["paths"])):
            c.text(f"{at}.paths[{j}]", p)
        c.integer(f"{at}.passages", h["passages"], 0)
        c.integer(f"{at}.sources", h["sources"], 0)
        c.records(f"{at}.skipped", h["skipped"], SKIPPED_FIELDS)


def _ivf(c: _Checker, value) -> None:
    """The optional ``ivf`` record: the inverted lists' files (module docstring)."""
    keys = ("name", "lists", "seed", "iters", "train_rows", "rows", "sha256")
    c.obj("ivf", value, keys)
    c.text("ivf.name", value["name"], IVF_NAME, "a name ivf-<10 hex>")
    c.integer("ivf.lists", value["lists"], 1)
    c.integer("ivf.seed", value["seed"], 0)
    c.integer("ivf.iters", value["iters"], 0)
    c.integer("ivf.train_rows", value["train_rows"], 1)
    c.integer("ivf.rows", value["rows"], 0)
    seconds = value.get("seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds >= 0:
        c.fail("ivf.seconds", seconds, "a number >= 0")
    digests = c.obj("ivf.sha256", value["sha256"], ("centroids", "offsets", "ids", "rows"))
    for kind in ("centroids", "offsets", "ids", "rows"):
        c.text(f"ivf.sha256.{kind}", digests[kind], HEX64, "64 hex digits")


def check_manifest(m: object, path: Path, fmt: str = "jaxparadigm-index", version: int = 1) -> None:
    """Raise :class:`InputError` naming the first bad field of manifest ``m`` (module docstring;
    C1.1)."""
    c = _Checker(path)
    if not isinstance(m, dict) or m.get("format") != fmt or m.get("version") != version:
        raise InputError(f"{path}: not a {fmt} manifest of version {version}")
    keys = ("model", "dtype", "shard_rows", "count", "status", "pending", "build", "sources")
    c.obj("", m, (*keys, "shards"))
    model = c.obj("model", m["model"], ("name", "dim", "max_seq_length"))
    c.text("model.name", model["name"])
    c.integer("model.dim", model["dim"], 1)
    c.integer("model.max_seq_length", model["max_seq_length"], 1)
    if m["dtype"] != "float32":
        c.fail("dtype", m["dtype"], "'float32'")
    shard_rows = c.integer("shard_rows", m["shard_rows"], 1)
    count = c.integer("count", m["count"], 0)
    build = c.obj("build", m["build"], ("chunk_tokens", "overlap", "batch_size"))
    chunk = c.integer("build.chunk_tokens", build["chunk_tokens"], 2)
    c.integer("build.overlap", build["overlap"], 0, chunk - 1)
    c.integer("build.batch_size", build["batch_size"], 1)
    if "context" in build:
        c.text("build.context", build["context"], BUILD_CONTEXT, "'outline'")
    c.records("sources", m["sources"], SOURCE_FIELDS)
    c.records("files", m.get("files", []), FILE_FIELDS)
    c.records("skipped", m.get("skipped", []), SKIPPED_FIELDS)
    _history(c, "history", m.get("history", []))
    c.shards("shards", m["shards"], shard_rows, count)
    if "ivf" in m:
        _ivf(c, m["ivf"])
    status, pending = m["status"], m["pending"]
    if status == "complete":
        if pending is not None:
            c.fail("pending", pending, "null when status is 'complete'")
        total = sum(s["passages"] for s in m["sources"])
        if total != count:
            c.fail("sources", f"{total} passages in all", f"count={count}")
    elif status == "building":
        c.obj("pending", pending, ("plan_sha256", "start_row", "rows"))
        c.text("pending.plan_sha256", pending["plan_sha256"], HEX64, "64 hex digits")
        c.integer("pending.start_row", pending["start_row"], 0, count)
        c.integer("pending.rows", pending["rows"], 0)
        if "base" in pending:
            base = c.obj("pending.base", pending["base"], ("count", "shards", "sources", "files"))
            base_count = c.integer("pending.base.count", base["count"], 0)
            c.shards("pending.base.shards", base["shards"], shard_rows, base_count)
            c.records("pending.base.sources", base["sources"], SOURCE_FIELDS)
            c.records("pending.base.files", base["files"], FILE_FIELDS)
            _history(c, "pending.base.history", base.get("history", []))
    else:
        c.fail("status", status, "'complete' or 'building'")
