"""The tape's recorded graph: backward nodes, their saved tensors, the reverse order (C3.1, C2.2).

A ``BackwardNode`` is one recorded op: its PyTorch-style ``name``, ``next_functions`` (the edges
to the nodes of its inputs) and the tensors it saved for backward; ``AccumulateGrad`` is the node
of a leaf. ``reverse_topological(root)`` lists the nodes reachable from ``root``, each before every
node it feeds, which is the order ``Var.backward`` visits them in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax

__all__ = [
    "SECOND_BACKWARD_MESSAGE",
    "AccumulateGrad",
    "BackwardNode",
    "SavedTensors",
    "reverse_topological",
    "saved_tensors_below",
]

SECOND_BACKWARD_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


class BackwardNode:
    """A recorded op's backward: ``name``, ``next_functions`` and its saved tensors. C3.1/C2.2."""

    __slots__ = ("name", "next_functions", "_fn", "_saved", "_had_saved", "__weakref__")

    def __init__(self, name: str, next_functions: tuple, fn: Callable, saved: tuple):
        self.name = name
        self.next_functions = next_functions
        self._fn = fn
        self._saved: tuple | None = saved
        self._had_saved = bool(saved)

    @property
    def saved_tensors(self) -> tuple:
        """The arrays this node keeps for backward; ``RuntimeError`` once they were freed."""
        if self._saved is None:
            raise RuntimeError(SECOND_BACKWARD_MESSAGE)
        return self._saved

    def release(self) -> None:
        """Drop the saved tensors (what ``backward`` does when ``retain_graph=False``)."""
        self._saved = None

    def apply(self, g: jax.Array) -> tuple:
        """Gradients for each entry of ``next_functions`` given the output gradient ``g``."""
        if self._saved is None and self._had_saved:
            raise RuntimeError(SECOND_BACKWARD_MESSAGE)
        return self._fn(g, *(self._saved or ()))

    def __repr__(self) -> str:
        return f"<{self.name}>"


class GradLeaf(Protocol):
    """What ``AccumulateGrad`` needs of its leaf (a ``Var``): a writable ``.grad``, first ``None``.

    A protocol rather than ``Var`` itself, so this module does not import ``var`` (which imports
    it).
    """

    grad: Any


class AccumulateGrad(BackwardNode):
    """The node of a leaf ``Var(requires_grad=True)``: adds the incoming gradient to ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: GradLeaf):
        super().__init__("AccumulateGrad", (), lambda g: (), ())
        self.variable = variable

    def accumulate(self, g: jax.Array) -> None:
        v = self.variable
        v.grad = g if v.grad is None else v.grad + g


def reverse_topological(root: BackwardNode) -> list[BackwardNode]:
    """Nodes reachable from ``root``, each before every node it feeds (root first)."""
    order: list[BackwardNode] = []
    seen: set[int] = set()
    stack: list[tuple[BackwardNode, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append((nxt, False))
    order.reverse()
    return order


class SavedTensors(NamedTuple):
    """How many saved arrays the graph below a Var still holds, and their bytes. C2.2."""

    count: int  # type: ignore[assignment]  # field shadows tuple.count (torch's name)
    nbytes: int


def saved_tensors_below(root: BackwardNode) -> SavedTensors:
    """Count and bytes of the saved tensors held by the nodes reachable from ``root`` (C2.2)."""
    count = nbytes = 0
    for node in reverse_topological(root):
        for arr in node._saved or ():
            if arr is None:
                continue
            count += 1
            nbytes += int(arr.nbytes)
    return SavedTensors(count, nbytes)
