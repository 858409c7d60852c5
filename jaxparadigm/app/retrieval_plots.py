"""The retrieval report's bar chart: recall@1, recall@5 and MRR per method (C1.1).

matplotlib is imported (and its Agg backend selected) only inside :func:`plot_metrics`, never at
import time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_metrics"]


def plot_metrics(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ("recall@1", "recall@5", "mrr")
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(results)
    for j, (method, res) in enumerate(results.items()):
        xs = np.arange(len(metrics)) + (j - (len(results) - 1) / 2) * width
        ax.bar(xs, [res[m] for m in metrics], width, label=method)
    ax.set_xticks(np.arange(len(metrics)), metrics)
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.set_title("pydoc topics: keyword vs semantic retrieval (all-MiniLM-L6-v2 in JAX)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
