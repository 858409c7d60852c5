"""A call's residuals: its inner graph and the forward values its reverse sweep reads (C2.2).

``jit``'s and ``scan``'s forward rules (``rules.call``, ``rules.control_flow``) and
``reverse_mode`` keep a :class:`Saved` instead of the whole forward environment: of the forward
values, only those ``Graph.read_by_backward`` lists are kept, and they go with the ``Saved``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import jax

if TYPE_CHECKING:
    from jaxparadigm.autodiff.graph import Graph

__all__ = ["Saved"]


@jax.tree_util.register_pytree_node_class
class Saved:
    """Residuals of a call: its ``graph`` and the forward values its reverse sweep reads. C2.2.

    ``Saved.of(graph, env)`` keeps only ``graph.read_by_backward`` (closed-over constants are
    restored from the graph, ``drop`` names variables the caller restores itself, e.g. a scan's
    per-iteration inputs). It is a pytree whose leaves are the kept values, so a ``lax.scan`` can
    stack one per iteration; ``backward(cts)`` runs the graph's reverse sweep on it.
    """

    def __init__(self, graph: Graph, env: dict):
        self.graph = graph
        self.env = env

    @classmethod
    def of(cls, graph: Graph, env: dict, drop: Iterable[Any] = ()) -> Saved:
        drop = set(drop)
        return cls(graph, {k: env[k] for k in graph.read_by_backward if k in env and k not in drop})

    def full_env(self, restored: dict | None = None) -> dict:
        """The environment for the reverse sweep: constants, ``restored`` values, saved values."""
        env = dict(zip(self.graph.jaxpr.constvars, self.graph.consts, strict=True))
        env.update(restored or {})
        env.update(self.env)
        return env

    def backward(
        self, cts: Sequence, restored: dict | None = None, wrt: Sequence[bool] | None = None
    ) -> list:
        """Input cotangents of the saved call given its output cotangents (``None`` = zero);
        ``wrt``: the call's differentiated inputs (all when ``None``)."""
        return self.graph.backward(self.full_env(restored), list(cts), wrt)

    def tree_flatten(self) -> tuple[list[Any], tuple[Graph, tuple[Any, ...]]]:
        keys = tuple(self.env)
        return [self.env[k] for k in keys], (self.graph, keys)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Graph, tuple[Any, ...]], children: Iterable[Any]) -> Saved:
        graph, keys = aux
        return cls(graph, dict(zip(keys, children, strict=True)))
