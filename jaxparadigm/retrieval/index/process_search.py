"""Exact search over an index split across ``jax.distributed`` processes (C1.1, C5.2).

Process ``p`` of ``N`` holds the shards :func:`~jaxparadigm.retrieval.index.reader.shard_range`
gives it (contiguous, so its rows are one run ``[first, first + rows)``) and searches them on its
own devices; nothing else of the rows is ever read or sent. A search is one *step* that every
process takes together, through JAX's own collectives over the group (gloo on CPU):

1. header, broadcast from process 0 (``broadcast_one_to_all``): ``(op, n, k)`` int32, op one of
   search, heartbeat, stop;
2. the ``n`` queries, broadcast from process 0 (float32 ``[n, dim]`` sent as their int32 bits, so
   the broadcast's sum with zeros is exact);
3. each process: local top-``k`` of its rows (the one engine,
   :class:`~jaxparadigm.retrieval.dense.vector_search.VectorSearcher`, on its local devices), row
   ids shifted by ``first``, padded to ``k`` with ``(-inf, -1)``;
4. ``process_allgather`` of the ``N`` local top-``k`` (scores' bits and int32 ids: ``8 k`` bytes
   per query and process, never a row); every process merges them:

       top_k(q) = the k best of the N k candidates by (score descending, row id ascending)

   -- the single-process tie rule, so the ids equal one process's exact search;
5. the passages of the merged hits: each process serialises those it holds (JSON), and a
   ``process_allgather`` of their lengths, then of the bytes, gives them to every process.

Every process opens its part of the index (:func:`open_together`) and the group agrees on it before
anything else: one ``process_allgather`` of each process's failure (empty when it opened), and if
any failed, every process raises the same :class:`~jaxparadigm.errors.InputError` naming the first
that failed and why (a damaged shard that only process 1 holds is named by process 0 at once, not
after a collective's timeout). Every process opens the manifest itself; the first step also gathers
each one's manifest digest (sha256) and refuses a group whose processes opened different manifests
(an ``index add`` committed in between). A collective that fails (a process died: gloo reports the
closed connection at once) raises :class:`~jaxparadigm.errors.GroupFailed` naming the failure, and
the group is then *broken*: every later call raises it again without touching the group.

Test-only fault injection: with ``JAXPARADIGM_FAULT_SEARCH_KILL=P@S`` process ``P`` kills itself
(SIGKILL) as its search step ``S`` (0-based, heartbeats not counted) begins.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import signal
import threading
from collections.abc import Callable
from typing import TypeVar

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxparadigm.errors import GroupFailed, InputError
from jaxparadigm.retrieval.dense import vector_search
from jaxparadigm.retrieval.dense.vector_search import TopK
from jaxparadigm.retrieval.documents.passages import Passage

__all__ = ["FAULT_ENV", "ProcessGroupSearch", "merge_process_topk", "open_together"]

#: ``P@S``: process ``P`` kills itself with SIGKILL as its search step ``S`` begins (tests only).
FAULT_ENV = "JAXPARADIGM_FAULT_SEARCH_KILL"
_SEARCH, _HEARTBEAT, _STOP = 1, 2, 3
_RECENT_STEPS = 64  # passages of this many recent steps stay readable (a request reads its own)


def merge_process_topk(scores: np.ndarray, ids: np.ndarray, k: int) -> TopK:
    """The best ``k`` of ``[P, q, m]`` per-process candidates: score descending, then row id
    ascending (an id ``-1`` scores ``-inf`` and comes last)."""
    s = np.concatenate(list(scores), axis=1)
    i = np.concatenate(list(ids), axis=1).astype(np.int64)
    order = np.lexsort((np.where(i < 0, np.iinfo(np.int64).max, i), -s), axis=1)[:, :k]
    return TopK(np.take_along_axis(s, order, 1), np.take_along_axis(i, order, 1))


_Opened = TypeVar("_Opened")


def open_together(open_part: Callable[[], _Opened]) -> _Opened:
    """``open_part()`` (this process's part of the index), then the group agrees (module
    docstring): its value when every process opened its part, else one InputError in every
    process, ``process P of N could not open its part of the index: <its error>``. A failed
    collective raises :class:`~jaxparadigm.errors.GroupFailed`."""
    process, processes = jax.process_index(), jax.process_count()
    try:
        opened, problem = open_part(), ""
    except InputError as exc:
        opened, problem = None, " ".join(str(exc).split())
    data = np.frombuffer(problem.encode(), np.uint8)
    try:
        sizes = np.asarray(
            multihost_utils.process_allgather(np.array([data.size], np.int32))
        ).reshape(-1)
        if sizes.max() == 0:
            return opened  # type: ignore[return-value]  # every open_part() returned
        buf = np.zeros(int(sizes.max()), np.uint8)
        buf[: data.size] = data
        every = np.asarray(multihost_utils.process_allgather(buf))
    except Exception as exc:  # gloo: a process died while the group opened the index
        raise GroupFailed(
            f"process {process} of {processes}: the search group failed while opening the index "
            f"({' '.join(str(exc).split())[:300]}); a process died or stopped answering"
        ) from None
    first = int(np.flatnonzero(sizes)[0])
    told = bytes(every[first][: sizes[first]]).decode()
    raise InputError(f"process {first} of {processes} could not open its part of the index: {told}")


def _fault_step() -> int | None:
    text = os.environ.get(FAULT_ENV, "")
    if not text:
        return None
    who, _, step = text.partition("@")
    return int(step) if int(who) == jax.process_index() else None


class ProcessGroupSearch:
    """The group's exact search (module docstring): process ``p`` holds rows ``[first, first +
    vectors.source.rows)`` of ``total`` and ``passage_of(row)`` for them.

    All processes call :meth:`search` together (SPMD: process 0's queries and ``k`` are used), or
    process 0 alone calls it while every other process sits in :meth:`follow`; process 0 keeps an
    idle group alive with :meth:`heartbeat` and ends :meth:`follow` with :meth:`stop`.
    """

    def __init__(
        self,
        vectors: vector_search.VectorSearcher,
        first: int,
        total: int,
        passage_of: Callable[[int], Passage],
        manifest: dict,
    ) -> None:
        self.vectors, self.first, self.total = vectors, first, total
        self.passage_of = passage_of
        self.process, self.processes = jax.process_index(), jax.process_count()
        self.dim = vectors.source.dim
        self.steps = 0
        self.broken: str | None = None
        self.last_op = 0
        self._lock = threading.Lock()  # one step at a time (serve: the batcher and heartbeats)
        self._recent: collections.deque[dict[int, Passage]] = collections.deque(
            maxlen=_RECENT_STEPS
        )
        self._fault = _fault_step()
        self._check_manifests(manifest)

    def _collective(self, fn, *args):
        """``fn(*args)`` (a multihost collective); a failure breaks the group (GroupFailed)."""
        if self.broken is not None:
            raise GroupFailed(self.broken)
        try:
            return fn(*args)
        except Exception as exc:  # gloo: "Connection closed by peer", a timeout, ...
            self.broken = (
                f"process {self.process} of {self.processes}: the search group failed "
                f"({' '.join(str(exc).split())[:300]}); a process died or stopped answering"
            )
            raise GroupFailed(self.broken) from None

    def _check_manifests(self, manifest: dict) -> None:
        text = json.dumps(manifest, sort_keys=True).encode()
        digest = np.frombuffer(hashlib.sha256(text).digest(), np.int32)
        every = self._collective(multihost_utils.process_allgather, digest)
        differ = [p for p in range(self.processes) if not np.array_equal(every[p], every[0])]
        if differ:
            raise InputError(
                f"index manifest: process(es) {differ} opened another manifest than process 0 "
                "(an `index add` committed while the group opened the index); run the search again"
            )

    def _step(self, op: int, queries: np.ndarray | None, k: int) -> TopK | None:
        with self._lock:
            n = 0 if queries is None else queries.shape[0]
            header = np.array([op, n, k], np.int32)
            got = self._collective(multihost_utils.broadcast_one_to_all, header)
            op, n, k = (int(v) for v in got)
            self.last_op = op
            if op != _SEARCH:
                return None
            if self._fault == self.steps:
                os.kill(os.getpid(), signal.SIGKILL)
            self.steps += 1
            bits = np.zeros((n, self.dim), np.int32) if queries is None else queries.view(np.int32)
            got = self._collective(multihost_utils.broadcast_one_to_all, bits)
            q = np.ascontiguousarray(got, np.int32).view(np.float32)
            top = self._merged(q, k)
            self._recent.append(self._gather_passages(top.ids))
            return top

    def _merged(self, q: np.ndarray, k: int) -> TopK:
        local = self.vectors.search(q, min(k, self.vectors.source.rows))
        pad = k - local.ids.shape[1]
        scores = np.pad(local.scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        ids = np.pad(local.ids + self.first, ((0, 0), (0, pad)), constant_values=-1)
        packed = np.concatenate([scores.view(np.int32), ids.astype(np.int32)], axis=1)
        every = self._collective(multihost_utils.process_allgather, packed)  # [P, q, 2k]
        every = np.asarray(every, np.int32)
        return merge_process_topk(
            np.ascontiguousarray(every[..., :k]).view(np.float32),
            every[..., k:],
            min(k, self.total),
        )

    def _gather_passages(self, ids: np.ndarray) -> dict[int, Passage]:
        mine = sorted(
            {
                int(r)
                for r in ids.reshape(-1)
                if self.first <= r < self.first + self.vectors.source.rows
            }
        )
        data = json.dumps([[r, *self.passage_of(r)] for r in mine], ensure_ascii=False).encode()
        sizes = self._collective(
            multihost_utils.process_allgather, np.array([len(data)], np.int32)
        ).reshape(-1)
        buf = np.zeros(int(sizes.max()), np.uint8)
        buf[: len(data)] = np.frombuffer(data, np.uint8)
        every = self._collective(multihost_utils.process_allgather, buf)
        out: dict[int, Passage] = {}
        for p in range(self.processes):
            for row, *fields in json.loads(bytes(every[p][: sizes[p]]).decode()):
                out[row] = Passage(*fields)
        return out

    def search(self, queries: np.ndarray, k: int) -> TopK:
        """Top ``k`` of every process's rows for each query (float32 ``[n, dim]``), merged."""
        top = self._step(_SEARCH, np.ascontiguousarray(queries, np.float32), k)
        assert top is not None  # a search step returns its result
        return top

    def passage(self, row: int) -> Passage:
        """The passage of ``row``: held here, or a hit of one of the recent steps."""
        if self.first <= row < self.first + self.vectors.source.rows:
            return self.passage_of(row)
        for step in reversed(self._recent):
            if row in step:
                return step[row]
        raise InputError(
            f"row: got {row}, held by another process and not a hit of the last "
            f"{_RECENT_STEPS} searches (only hits are sent between processes)"
        )

    def follow(self) -> int:
        """Take process 0's steps until it sends stop (every process but 0); returns the
        number of searches taken part in."""
        if self.process == 0:
            raise RuntimeError("follow: process 0 leads the group; call search/heartbeat/stop")
        while True:
            self._step(0, None, 0)
            if self.last_op == _STOP:
                return self.steps

    def heartbeat(self) -> None:
        """Process 0: one empty step, so that an idle group notices a dead process."""
        self._step(_HEARTBEAT, None, 0)

    def stop(self) -> None:
        """Process 0: end the other processes' :meth:`follow` (nothing when the group is broken)."""
        if self.broken is None:
            self._step(_STOP, None, 0)
