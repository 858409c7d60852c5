"""Retrieval corpora: CPython's ``pydoc_data.topics`` or a text file, one document a line (C1.1).

``pydoc_data.topics.topics`` maps 79 help topics (``"assert"``, ``"formatstrings"``, ...) to their
reference-manual text (shipped with CPython; no download). Topics are long and MiniLM reads at most
256 tokens, so for dense retrieval each topic is cut into passages of ``chunk_words`` words, each
prefixed with the topic's title line; a topic's score is the maximum over its passages.
"""

from __future__ import annotations

import os
from pathlib import Path

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.documents.passages import Document, split_passages

__all__ = ["pydoc_topics", "topic_title", "chunk_document", "read_corpus"]


def pydoc_topics() -> dict[str, str]:
    """``{topic: text}`` from ``pydoc_data.topics`` in sorted topic order."""
    from pydoc_data.topics import topics

    return {name: topics[name] for name in sorted(topics)}


def topic_title(text: str) -> str:
    """The first non-empty line of a topic (``'The "assert" statement'``)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def chunk_document(text: str, chunk_words: int, title: str = "") -> list[str]:
    """Consecutive ``chunk_words``-word passages of ``text``, each prefixed by ``title`` if given.

    The windows are :func:`~jaxparadigm.retrieval.documents.passages.split_passages`' word windows
    (no overlap), their words joined by one space. An empty text gives one passage (the title,
    possibly empty) so every document stays indexable.
    """
    chunk_words = require_int("chunk_words", chunk_words, 1)
    windows = split_passages([Document("", text)], None, chunk_words, 0)
    prefix = f"{title}: " if title else ""
    if not windows:
        return [title]
    return [prefix + " ".join(w.text.split()) for w in windows]


def read_corpus(corpus: str | os.PathLike) -> tuple[list[str], list[str]]:
    """``(names, texts)`` for ``"pydoc"`` (topic names, topic texts) or a file (``line N``, lines).

    A file is read as UTF-8; blank lines are skipped. A missing file, one that is not UTF-8 text,
    a line holding NUL characters (a binary file) and a corpus without any line are refused with
    :class:`~jaxparadigm.errors.InputError` (the CLI's ``search --corpus`` reaches here).
    """
    if str(corpus) == "pydoc":
        topics = pydoc_topics()
        return list(topics), list(topics.values())
    path = Path(corpus)
    if not path.is_file():
        what = "not a file" if path.exists() else "no such file"
        raise InputError(
            f"corpus {os.fspath(corpus)!r}: {what}; expected 'pydoc' or a UTF-8 text file "
            "with one document per line"
        )
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"corpus {os.fspath(path)!r}: not UTF-8 text ({exc})") from None
    except OSError as exc:
        raise InputError(f"corpus {os.fspath(path)!r}: cannot be read ({exc.strerror})") from None
    named = [(f"line {i}", line.strip()) for i, line in enumerate(lines, start=1) if line.strip()]
    for name, text in named:
        if "\x00" in text:
            raise InputError(
                f"corpus {os.fspath(path)!r} {name}: holds NUL characters (a binary file?); "
                "expected UTF-8 text, one document a line"
            )
    if not named:
        raise InputError(f"corpus {os.fspath(path)!r}: no non-blank lines; expected documents")
    return [n for n, _ in named], [t for _, t in named]
