"""A worker of the multi-process search tests (issue 37): joins the group named by the
JAXPARADIGM_* variables (none: searches alone), opens ``INDEX`` with an IndexSearcher (its own shards only), searches the
queries of ``QUERIES.npy`` for ``k`` and, on process 0, writes the merged ids and scores, the
passages of the hits and each process's shards and peak memory to ``OUT.npz``/``OUT.json``.

    python tests/retrieval/index/process_search_worker.py INDEX QUERIES.npy K OUT

``OTHER_INDEX_1=DIR``: process 1 opens DIR instead (a group whose processes disagree).
"""

import json
import os
import sys


def peak_rss_kib() -> int:
    """VmHWM of this process, KiB."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


def main(index_dir: str, queries: str, k: str, out: str) -> None:
    import numpy as np

    from jaxparadigm.retrieval.index.searcher import IndexSearcher
    from jaxparadigm.train.distributed import DistributedSettings, initialize_distributed

    initialize_distributed(DistributedSettings())  # no JAXPARADIGM_* variables: one process
    import jax
    from jax.experimental import multihost_utils

    if os.environ.get("JAXPARADIGM_PROCESS_ID") == "1":
        index_dir = os.environ.get("OTHER_INDEX_1", index_dir)
    searcher = IndexSearcher(index_dir)
    top = searcher.search_vectors(np.load(queries), int(k))
    passages = [[searcher.passage(int(r)).text for r in row if r >= 0] for row in top.ids]
    held = [searcher.index.held.start, searcher.index.held.stop, peak_rss_kib()]
    every = multihost_utils.process_allgather(np.array(held, np.int64))
    if jax.process_index() == 0:
        np.savez(out + ".npz", ids=top.ids, scores=top.scores)
        with open(out + ".json", "w") as fh:
            json.dump({"passages": passages, "held": every.tolist()}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
