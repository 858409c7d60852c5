"""Small matplotlib figures for the claims ledger, written as PNGs into one temporary folder per
process (``write_report`` copies them next to the report).

Drawn with matplotlib's object API (``matplotlib.figure.Figure`` saved directly): no pyplot, and
no process-wide backend switch at import."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure


@functools.cache
def figure_dir() -> Path:
    """The folder this process writes claim figures into."""
    return Path(tempfile.mkdtemp(prefix="jaxparadigm-claims-"))


def bar_chart(
    name: str, labels: Sequence[str], values: Sequence[float], title: str, xlabel: str
) -> str:
    """A bar chart of ``values`` per label; returns the PNG path."""
    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    ax.bar(list(labels), list(values), color="#4c72b0")
    for i, v in enumerate(values):
        ax.annotate(f"{v:.3g}", (i, v), ha="center", va="bottom", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    return _save(fig, name)


def line_chart(
    name: str,
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    title: str,
    xlabel: str,
    ylabel: str,
) -> str:
    """One line per series against ``x``; returns the PNG path."""
    fig = Figure(figsize=(6, 3.4))
    ax = fig.subplots()
    for label, ys in series.items():
        ax.plot(list(x), list(ys), marker=".", label=label)
    ax.axhline(0.0, color="grey", lw=0.6)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    return _save(fig, name)


def _save(fig: Figure, name: str) -> str:
    path = figure_dir() / name
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return str(path)
