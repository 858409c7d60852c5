"""The settings of an index build, checked, and the hash of what a build will write (C1.1).

Its functions::

    build_settings(encoder, chunk_tokens, overlap, shard_rows, batch_size, context)
        -> (the manifest's ``build`` entry, shard_rows), every argument checked
    passage_contexts_for(reading, passages, build)   each passage's context, or "" per passage
    plan_sha256(model, build, start_row, passages, contexts)   the ``pending`` plan's sha256

``build.context`` = :data:`CONTEXT` when the index stores each passage's context (file name and
section titles, :mod:`~jaxparadigm.retrieval.documents.outline`) for the keyword ranking.
"""

from __future__ import annotations

import hashlib
import json

from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.documents.passages import Passage, passage_contexts
from jaxparadigm.retrieval.documents.reading import Reading

__all__ = ["CONTEXT", "build_settings", "passage_contexts_for", "plan_sha256"]

#: ``build.context`` of an index that stores each passage's context; absent: no contexts (an
#: index built before them, or with ``context=False``). The embedding is always the passage
#: text's alone: encoding ``context + text`` cost the dense ranking 6 of 70 questions
#: (benchmarks/RESULTS.md, "Passages that know where they are").
CONTEXT = "outline"


def build_settings(
    encoder, chunk_tokens, overlap, shard_rows, batch_size, context
) -> tuple[dict, int]:
    """The manifest's ``build`` entry and ``shard_rows``, every argument checked (a NumPy integer
    kept as the int it equals); ``chunk_tokens`` None: ``encoder.max_seq_length - 2``."""
    limit = encoder.max_seq_length - 2
    chunk_tokens = limit if chunk_tokens is None else chunk_tokens
    chunk_tokens = require_int("chunk_tokens", chunk_tokens, 2)
    if chunk_tokens > limit:
        raise InputError(
            f"chunk_tokens: got {chunk_tokens}, expected <= {limit} (max_seq_length "
            f"{encoder.max_seq_length} minus [CLS] and [SEP]; longer windows would be truncated)"
        )
    overlap = require_int("overlap", overlap, 0, chunk_tokens - 1)
    shard_rows = require_int("shard_rows", shard_rows, 1)
    batch_size = require_int("batch_size", batch_size, 1)
    if not isinstance(context, bool):
        raise TypeError(f"context: got {quote(context)}, expected True or False")
    build = {"chunk_tokens": chunk_tokens, "overlap": overlap, "batch_size": batch_size}
    return build | ({"context": CONTEXT} if context else {}), shard_rows


def passage_contexts_for(reading: Reading, passages: list[Passage], build: dict) -> list[str]:
    """Each passage's context when the build records them (``build["context"]``), else ``""``."""
    on = build.get("context") == CONTEXT
    return passage_contexts(reading.documents, passages) if on else [""] * len(passages)


def plan_sha256(
    model: dict, build: dict, start_row: int, passages: list[Passage], contexts: list[str]
) -> str:
    """sha256 of the model, build entry, first row and every passage (with its context when it
    has one): a rerun resumes only the plan it started."""
    h = hashlib.sha256(json.dumps([model, build, start_row], sort_keys=True).encode())
    for p, context in zip(passages, contexts, strict=True):
        h.update(json.dumps([*p, context] if context else p, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()
