"""Search a persistent index folder: open it (checksums first), place, top-k, passages (C1.1).

``IndexSearcher(index_dir)`` opens the folder as an
:class:`~jaxparadigm.retrieval.index.reader.Index` (manifest, every shard's sha256, unit rows,
memory-mapped float32 embeddings) and hands the rows to the package's one search engine,
:class:`~jaxparadigm.retrieval.dense.vector_search.VectorSearcher` (exact float32 by default;
``dtype="bfloat16"``/``"int8"`` keeps a compact copy and rescores the candidates from the float32
rows). How it is opened and how it searches are a
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` (``options=``; the keywords ``dtype``,
``resident``, ``k``, ``approx``, ``nprobe`` set the same fields, with the same checks).
``search(encoder, queries, k)`` returns, per query, the best :class:`Hit` first:
``score = cos(query, passage)`` with the :class:`~jaxparadigm.retrieval.documents.passages.Passage`;
``search_vectors(queries, k)`` searches given vectors, ``s[i, r] = Q_i . X_r``, as a
:class:`~jaxparadigm.retrieval.dense.vector_search.TopK`. A shard's passages are read (and checked)
only when one of its rows is a hit.

Under an initialised ``jax.distributed`` group of ``N > 1`` processes each process opens only its
own shards (:func:`~jaxparadigm.retrieval.index.reader.shard_range`; their passages' checksums too),
the group agreeing that every process opened its part
(:func:`~jaxparadigm.retrieval.index.process_search.open_together`), and searches them on its local
devices; ``search``/``search_vectors`` are then collective (every process calls them, process 0's
queries count) and return the merged global top-``k``
(:class:`~jaxparadigm.retrieval.index.process_search.ProcessGroupSearch`): the same ids as one
process searching every shard. What such a search cannot do (IVF lists span every row, the hybrid
keyword ranking needs every passage, approximate top-k) is refused by
:meth:`~jaxparadigm.retrieval.search_options.SearchOptions.check_process_group`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.dense.ivf_search import IVFSearcher, check_nprobe, default_nprobe
from jaxparadigm.retrieval.dense.vector_search import RowSource, TopK, VectorSearcher
from jaxparadigm.retrieval.documents.passages import Passage, PassageFields
from jaxparadigm.retrieval.index.build import DEFAULT_MODEL_NAME
from jaxparadigm.retrieval.index.process_search import ProcessGroupSearch, open_together
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.search_options import SearchOptions

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = ["Hit", "IndexSearcher"]

_PLAIN = (type(None), int, bool, str)


class _HitRecord(NamedTuple):
    score: float
    row: int
    passage: Passage


class Hit(_HitRecord, PassageFields):
    """One result: cosine ``score``, corpus ``row`` and the :class:`Passage` it holds (its
    ``source``, ``start``, ``end`` and ``text`` also read as the hit's own)."""

    __slots__ = ()


def _opened_part(index_dir: str | os.PathLike, verify: bool, part: tuple[int, int]) -> Index:
    """Part ``part`` of the index, its passages' checksums checked too when ``verify``."""
    index = Index(index_dir, verify=verify, part=part)
    if verify:
        index.verify_passages()
    return index


class IndexSearcher:
    """An opened index folder, ready for top-k search on ``devices`` (C1.1).

    ``options``: how to open it (its ``dtype`` and ``stream``); or the keywords ``dtype``
    (default ``"float32"``) and ``resident`` (default True, i.e. ``stream=False``), not both."""

    def __init__(
        self,
        index_dir: str | os.PathLike,
        *,
        options: SearchOptions | None = None,
        dtype: str | None = None,
        devices: Sequence[jax.Device] | None = None,
        block_rows: int = 8192,
        resident: bool | None = None,
        verify: bool = True,
    ) -> None:
        keywords = {"dtype": dtype, "stream": None if resident is None else not resident}
        given = SearchOptions.from_keywords(
            options, keywords, {"dtype": "float32", "stream": False}
        )
        #: How the index was opened (only its dtype and stream are read).
        self.opened = given.opening()
        self._dense_options: dict[tuple, SearchOptions] = {}  # dense_options's checked keywords
        parts = jax.process_count()
        part = (jax.process_index(), parts) if parts > 1 else None
        if part is None:
            self.index = Index(index_dir, verify=verify)
        else:  # the group agrees on every part before its first step
            self.index = open_together(lambda: _opened_part(index_dir, verify, part))
        self.index_dir = self.index.path
        self.manifest = self.index.manifest
        self.source = RowSource(self.index.shard_arrays)
        if devices is None and part is not None:
            devices = jax.local_devices()  # this process's rows stay on its devices
        self.vectors = VectorSearcher(
            self.source,
            dtype=self.opened.dtype,
            devices=devices,
            block_rows=block_rows,
            resident=not self.opened.stream,
        )
        self._devices = devices
        self._ivf: IVFSearcher | None = None
        #: The group's search when this process is one of several (None: one process).
        self.group: ProcessGroupSearch | None = None
        if part is not None:
            self.group = ProcessGroupSearch(
                self.vectors,
                self.index.first_row,
                self.manifest["count"],
                self.index.passage,
                self.manifest,
            )

    @property
    def assignment(self) -> str | None:
        """In a group: which shards and rows this process holds, in words (None: one process)."""
        if self.group is None:
            return None
        held, g = self.index.held, self.group
        return (
            f"process {g.process} of {g.processes} holds shards {held.start}-{held.stop - 1} "
            f"(rows {g.first}-{g.first + self.source.rows - 1} of {g.total}) on "
            f"{len(self.vectors.devices)} device(s)"
        )

    @property
    def lists(self) -> int | None:
        """How many inverted lists the index has (``None``: no IVF, exact search only)."""
        return None if self.index.ivf is None else self.index.ivf.entry["lists"]

    def check_nprobe(self, nprobe: object) -> None:
        """Refuse ``nprobe`` (an int) on an index without IVF lists, outside ``[1, lists]``, or
        in a search split over processes (``None`` and ``"default"`` pass)."""
        if nprobe is None or nprobe == "default":
            return
        if self.group is not None:
            options = SearchOptions.read({"mode": "dense", "nprobe": nprobe})
            options.check_process_group(self.group.processes)
        if self.index.ivf is None:
            raise InputError(
                f"nprobe: got {nprobe!r}, but {self.index_dir} has no IVF lists (an exact index; "
                f"`jaxparadigm index ivf {self.index_dir} --lists N` adds them); expected "
                "nprobe=None"
            )
        check_nprobe(nprobe, self.index.ivf.entry["lists"], str(self.index_dir))

    def resolve_nprobe(self, options: SearchOptions) -> int | None:
        """The inverted lists a search with ``options`` scans (None: exact): an int as given
        (:meth:`check_nprobe`); ``"default"``: :func:`default_nprobe` of the index's lists when it
        has them, ``approx`` is off and it is not split over processes, else None. A search
        split over processes refuses what it cannot do (``SearchOptions.check_process_group``)."""
        if self.group is not None:
            options.check_process_group(self.group.processes)
        if options.nprobe != "default":
            self.check_nprobe(options.nprobe)
            return options.nprobe
        if self.lists is None or options.approx or self.group is not None:
            return None
        return default_nprobe(self.lists, len(self))

    def dense_options(
        self,
        options: SearchOptions | None,
        k: int | None = None,
        approx: bool | None = None,
        nprobe: object = None,
    ) -> SearchOptions:
        """The options of a dense search of this index: ``options`` (mode "dense", opened as this
        index was), or the keywords (``k`` default 10, ``approx`` False, ``nprobe`` None: exact)
        checked as a :class:`SearchOptions`; a keyword given with ``options`` is refused.

        Keywords of plain types (None, int, bool, str) are checked once: the frozen options are
        kept by their values and types (so ``k=True`` is never taken for ``k=1``) and reused,
        which saves a batch-1 search two field checks (~65 us each)."""
        key = None
        if options is None and all(type(v) in _PLAIN for v in (k, approx, nprobe)):
            key = tuple((type(v), v) for v in (k, approx, nprobe))
            known = self._dense_options.get(key)
            if known is not None:
                return known
        keywords = {"k": k, "approx": approx, "nprobe": nprobe}
        defaults = {"k": 10, "approx": False, "nprobe": None}
        base = dataclasses.replace(self.opened, mode="dense")
        options = SearchOptions.from_keywords(options, keywords, defaults, base)
        if options.mode != "dense":
            raise InputError(
                f"search.mode={options.mode!r}: IndexSearcher ranks by the dense cosine alone "
                "(search_with_excerpts fuses in BM25); expected 'dense'"
            )
        options.check_opening(self.opened, str(self.index_dir))
        if key is not None and len(self._dense_options) < 64:
            self._dense_options[key] = options
        return options

    def _top(self, q: np.ndarray, options: SearchOptions, rt: float = 0.95) -> TopK:
        nprobe = self.resolve_nprobe(options)
        k = options.k
        if self.group is not None:
            return self.group.search(q, k)
        if nprobe is None:
            return self.vectors.search(q, k, approx=options.approx, recall_target=rt)
        assert self.index.ivf is not None  # checked by resolve_nprobe
        if self._ivf is None:  # placed on first use: the rows laid out per list
            ivf = self.index.ivf
            self._ivf = IVFSearcher(
                ivf.centroids, ivf.offsets, ivf.ids, ivf.rows, devices=self.vectors.devices
            )
        return self._ivf.search(q, min(k, len(self)), nprobe)

    def __len__(self) -> int:
        return self.source.rows if self.group is None else self.group.total

    def check_encoder(self, encoder: SentenceEncoder, model_name: str = DEFAULT_MODEL_NAME) -> None:
        """Refuse an encoder other than the one the index was built with (name, dim, length)."""
        want = self.manifest["model"]
        got = {"name": model_name, "dim": encoder.dim, "max_seq_length": encoder.max_seq_length}
        if got != want:
            raise InputError(f"{self.index_dir}: index was built with {want}, encoder is {got}")

    def passage(self, row: int) -> Passage:
        """The passage stored at corpus ``row`` (its shard's passages are read once, checked);
        in a group, a row of another process only when it was a hit of a recent search."""
        if self.group is not None:
            return self.group.passage(row)
        return self.index.passage(row)

    def hits(self, top: TopK) -> list[list[Hit]]:
        """:class:`Hit` lists (best first) for a :class:`TopK` of this index (an id ``-1``, no
        row found in the probed lists, is left out)."""
        return [
            [
                Hit(float(s), int(r), self.passage(int(r)))
                for s, r in zip(srow, rrow, strict=True)
                if r >= 0
            ]
            for srow, rrow in zip(top.scores, top.ids, strict=True)
        ]

    def search_vectors(
        self, queries: np.ndarray, k: int, nprobe: int | None = None, *, approx: bool = False
    ) -> TopK:
        """Top ``k`` rows for each row of ``queries`` (float ``[n, dim]``), best first.

        ``score[i, j] = queries[i] . X[ids[i, j]]`` (float32), ties to the lower row id: the same
        engine as :meth:`search` (this searcher's dtype and devices), with no encoder. Exact when
        ``nprobe`` is ``None``; else the rows of each query's ``nprobe`` nearest inverted lists
        (:mod:`~jaxparadigm.retrieval.dense.ivf_search`; ids ``-1``, scores ``-inf`` where those
        lists hold fewer than ``k`` rows). An index without IVF lists refuses any ``nprobe`` with a
        ``ValueError``, as does an ``nprobe`` outside ``[1, lists]``. ``approx``:
        ``lax.approx_max_k`` picks the candidates (exact search only).
        """
        options = self.dense_options(None, k, approx, nprobe)
        self.resolve_nprobe(options)
        if not isinstance(queries, np.ndarray | jax.Array):
            raise TypeError(
                f"queries: got {type(queries).__name__}, "
                f"expected a float32 array [n, {self.index.dim}]"
            )
        if not np.issubdtype(queries.dtype, np.floating):
            raise TypeError(
                f"queries: got dtype {queries.dtype}, "
                f"expected a float32 array [n, {self.index.dim}]"
            )
        if queries.ndim != 2 or queries.shape[1] != self.index.dim or queries.shape[0] < 1:
            raise InputError(
                f"queries: got shape {tuple(queries.shape)}, expected (n, {self.index.dim}) with "
                "n >= 1 (the index's dimension)"
            )
        q = np.asarray(queries, np.float32)
        if not np.all(np.isfinite(q)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(q), axis=1))[0])
            raise InputError(f"queries: row {bad} holds NaN or inf, expected finite values")
        return self._top(q, options)

    def search(
        self,
        encoder: SentenceEncoder,
        queries: str | Sequence[str],
        k: int | None = None,
        *,
        options: SearchOptions | None = None,
        approx: bool | None = None,
        recall_target: float = 0.95,
        model_name: str = DEFAULT_MODEL_NAME,
        nprobe: int | None = None,
    ) -> list[list[Hit]]:
        """Encode ``queries`` with ``encoder`` and return the top ``k`` hits of each, best first.

        ``options``: a dense :class:`SearchOptions` (its ``k``, ``nprobe``, ``approx``); or the
        keywords ``k`` (default 10), ``approx`` (default False) and ``nprobe`` (an int: scan that
        many inverted lists of an index with IVF lists; ``None``: exact), not both.
        A query the tokenizer finds no word piece in is refused (``SentenceEncoder.check_texts``).
        """
        options = self.dense_options(options, k, approx, nprobe)
        self.resolve_nprobe(options)  # before the encoder runs
        self.check_encoder(encoder, model_name)
        texts = [queries] if isinstance(queries, str) else list(queries)
        encoder.check_texts(texts, "queries")  # no word piece: InputError; only [UNK]: a warning
        q = np.asarray(encoder.encode(texts, normalize=True), np.float32).reshape(len(texts), -1)
        return self.hits(self._top(q, options, recall_target))
