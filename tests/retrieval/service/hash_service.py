"""A SearchService over a tiny folder index built with the hash encoder: no MiniLM load or compile,
so protocol, concurrency and browser tests start in about a second."""

from __future__ import annotations

import numpy as np

from jaxparadigm.retrieval.index.build import build_index
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.service.http_service import SearchService
from tests.retrieval.conftest import HashEncoder

DOCS = {
    "files.md": "To open a file for reading, call open(path) and read its lines. "
    "Closing the file releases it.\n\nA file opened for writing is truncated first.",
    "sleep.md": "The time module's sleep function pauses the program for some seconds. "
    "Use it to wait between retries.",
    "sets.md": "A set holds unique elements; add inserts one and union merges two sets. "
    "Sets are unordered.",
    "logging.md": "Configure logging with basicConfig. A logger writes records to handlers; "
    "a handler decides where the file or stream of records goes.",
}
KW = {"chunk_tokens": 24, "overlap": 4, "shard_rows": 8}


class ServingHashEncoder(HashEncoder):
    """The hash encoder with what SearchService calls: ``encode(str)`` (one vector) and
    ``tokenize`` (word-piece counts for the span attribute)."""

    def encode(self, texts, batch_size=32, normalize=True):
        if isinstance(texts, str):
            return self.vector(texts)
        return super().encode(texts, batch_size, normalize)

    def tokenize(self, texts):
        ids = [self.tokenizer.encode(t).ids for t in texts]
        n = max(len(i) for i in ids)
        return {"attention_mask": np.array([[1] * len(i) + [0] * (n - len(i)) for i in ids])}


def hash_index(root, tokenizer, docs_text=None):
    """``(index_dir, encoder)``: ``docs_text`` (default DOCS) written under ``root/docs`` and
    indexed into ``root/idx``."""
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in (docs_text or DOCS).items():
        (docs / name).write_text(text, encoding="utf-8")
    encoder = ServingHashEncoder(tokenizer)
    build_index([docs], root / "idx", encoder, **KW)
    return root / "idx", encoder


def hash_service(root, tokenizer, docs_text=None, **options):
    """A started SearchService over :func:`hash_index` (``options`` to SearchService)."""
    index_dir, encoder = hash_index(root, tokenizer, docs_text)
    searcher = IndexSearcher(index_dir)
    passage_of = lambda row: searcher.passage(row)._asdict()  # noqa: E731 - as index_service's
    return SearchService(searcher, encoder=encoder, passage_of=passage_of, **options).start()
