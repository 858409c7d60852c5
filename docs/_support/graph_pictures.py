"""Pictures of the autodiff tutorial's two graphs, drawn with matplotlib only (no graphviz needed).

* ``tape_dag(var)``: the backward chain a tape ``Var`` carries -- its ``grad_fn``, then every node
  reachable through ``next_functions`` (PyTorch's names), down to the ``AccumulateGrad`` leaves.
* ``graph_dag(graph)``: a traced ``Graph`` (jaxpr) -- input boxes, one node per equation labelled
  with its position in the topological order, output boxes, edges labelled with the variable.
* ``draw_dag(ax, dag)``: a layered drawing: a node's row is its longest distance from a source, so
  every edge points down the page.

Both adapters read only public attributes (``grad_fn``, ``next_functions``, ``name``;
``Graph.inputs``, ``Graph.nodes``, ``Graph.outputs``).
"""

from __future__ import annotations

from typing import NamedTuple


class Dag(NamedTuple):
    """Nodes (key -> label), their kind ("op", "leaf", "io") and labelled edges (src, dst, label)."""

    labels: dict
    kinds: dict
    edges: list


def tape_dag(var) -> Dag:
    """The backward chain of ``var``: edges run from a node to the node its gradient flows into."""
    labels, kinds, edges = {}, {}, []
    stack = [var.grad_fn]
    while stack:
        node = stack.pop()
        if id(node) in labels:
            continue
        labels[id(node)] = node.name
        kinds[id(node)] = "leaf" if node.name == "AccumulateGrad" else "op"
        for nxt, _ in node.next_functions:
            if nxt is not None:
                edges.append((id(node), id(nxt), ""))
                stack.append(nxt)
    return Dag(labels, kinds, edges)


def graph_dag(graph) -> Dag:
    """A traced ``Graph``: inputs -> equations (in topological order) -> outputs."""
    labels, kinds, edges = {}, {}, []
    source, names = {}, {}

    def name(v) -> str:
        return names.setdefault(v, f"v{len(names)}")

    for i, v in enumerate(graph.inputs):
        key = ("in", i)
        labels[key], kinds[key] = f"input {name(v)}\n{v.aval.str_short()}", "io"
        source[v] = key
    for k, node in enumerate(graph.nodes):
        key = ("node", k)
        labels[key], kinds[key] = f"{k}: {node.name}", "op"
        edges += [(source[v], key, name(v)) for v in node.inputs if v in source]
        for v in node.outputs:
            source[v] = key
            name(v)
    for i, v in enumerate(graph.outputs):
        key = ("out", i)
        labels[key], kinds[key] = f"output {i}", "io"
        if v in source:
            edges.append((source[v], key, name(v)))
    return Dag(labels, kinds, edges)


_FACE = {"op": "#dbe9f6", "leaf": "#fde2c4", "io": "#e8e8e8"}


def draw_dag(ax, dag: Dag, title: str = "") -> None:
    """Draw ``dag`` top-down on ``ax``: rows by longest path from a source, edges as arrows."""
    depth = dict.fromkeys(dag.labels, 0)
    for _ in dag.labels:  # longest path by relaxation; a DAG settles within len(nodes) rounds
        for src, dst, _label in dag.edges:
            depth[dst] = max(depth[dst], depth[src] + 1)
    rows: dict[int, list] = {}
    for key in dag.labels:
        rows.setdefault(depth[key], []).append(key)
    pos = {}
    for d, keys in rows.items():
        for i, key in enumerate(keys):
            pos[key] = (i - (len(keys) - 1) / 2, -d)
    for src, dst, label in dag.edges:
        (x0, y0), (x1, y1) = pos[src], pos[dst]
        ax.annotate(
            "",
            xy=(x1, y1 + 0.18),
            xytext=(x0, y0 - 0.18),
            arrowprops={"arrowstyle": "->", "color": "#555555"},
        )
        if label:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, label, fontsize=8, color="#1f5f99", ha="left")
    for key, (x, y) in pos.items():
        ax.text(
            x,
            y,
            dag.labels[key],
            ha="center",
            va="center",
            fontsize=9,
            bbox={"boxstyle": "round,pad=0.35", "facecolor": _FACE[dag.kinds[key]]},
        )
    width = max(len(keys) for keys in rows.values())
    ax.set_xlim(-width / 2 - 0.3, width / 2 + 0.3)
    ax.set_ylim(-max(rows) - 0.6, 0.6)
    ax.set_title(title, fontsize=10)
    ax.axis("off")
