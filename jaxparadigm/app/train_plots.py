"""PNG plots of a run's metrics with matplotlib (C5.1).

Drawn with the object API (``matplotlib.figure.Figure`` saved directly): no display, no pyplot,
and no process-wide backend switch at import (importing the train loop leaves matplotlib alone).

``plot_training`` draws loss (train and eval), learning rate and gradient norm against the step;
``plot_curves`` overlays labelled curves (e.g. one per Adam ``nu`` dtype).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from matplotlib.figure import Figure

__all__ = ["plot_curves", "plot_training"]


def plot_curves(
    curves: dict[str, tuple[list, list]],
    path: str | os.PathLike,
    *,
    title: str,
    ylabel: str,
    logy: bool = False,
) -> Path:
    """One figure with a line per ``label -> (xs, ys)``; non-finite points are left as gaps."""
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for label, (xs, ys) in curves.items():
        ys = [y if y is not None and math.isfinite(y) else float("nan") for y in ys]
        ax.plot(xs, ys, label=label, linewidth=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    if len(curves) > 1:
        ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return path


def plot_training(records: list[dict], out_dir: str | os.PathLike) -> list[Path]:
    """``loss.png``, ``lr.png``, ``grad_norm.png`` in ``out_dir`` from metrics records (C5.1).

    Train records have ``"loss"``, ``"lr"``, ``"grad_norm"``; eval records have ``"eval_loss"``.
    """
    out_dir = Path(out_dir)
    train = [r for r in records if "loss" in r]
    evals = [r for r in records if "eval_loss" in r]

    def series(rows, key):
        return [r["step"] for r in rows], [r[key] for r in rows]

    loss_curves = {"train": series(train, "loss")}
    if evals:
        loss_curves["eval"] = series(evals, "eval_loss")
    return [
        plot_curves(loss_curves, out_dir / "loss.png", title="loss", ylabel="loss", logy=True),
        plot_curves(
            {"lr": series(train, "lr")}, out_dir / "lr.png", title="learning rate", ylabel="lr"
        ),
        plot_curves(
            {"grad norm": series(train, "grad_norm")},
            out_dir / "grad_norm.png",
            title="global gradient norm",
            ylabel="||g||",
            logy=True,
        ),
    ]
