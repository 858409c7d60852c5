"""jaxparadigm.autodiff: autodiff rebuilt -- tape, graph + VJP registry, Function, func transforms.

Claims C2.2 (saved tensors freed after backward), C3.1 (tape vs declared graph), C3.2 (one static
registry maps each primitive to its gradient rule), C3.3 (grad-of-grad re-enters the graph).
``jaxparadigm.autodiff.func`` (torch.func look-alike) and ``jaxparadigm.autodiff.tape`` are
attributes after ``import jaxparadigm.autodiff``, as ``torch.func`` is after ``import torch``.
"""

from jaxparadigm.autodiff import call_rules as _call_rules  # noqa: F401  (registers rules)
from jaxparadigm.autodiff import control_flow_rules as _control_flow_rules  # noqa: F401
from jaxparadigm.autodiff import conv_rules as _conv_rules  # noqa: F401
from jaxparadigm.autodiff import decomposition_rules as _decomposition_rules  # noqa: F401
from jaxparadigm.autodiff import elementwise_rules as _elementwise_rules  # noqa: F401
from jaxparadigm.autodiff import func, tape  # noqa: F401  (submodules as attributes)
from jaxparadigm.autodiff import indexing_rules as _indexing_rules  # noqa: F401
from jaxparadigm.autodiff import linalg_rules as _linalg_rules  # noqa: F401
from jaxparadigm.autodiff import reduction_rules as _reduction_rules  # noqa: F401
from jaxparadigm.autodiff import sorting_rules as _sorting_rules  # noqa: F401
from jaxparadigm.autodiff import special_rules as _special_rules  # noqa: F401
from jaxparadigm.autodiff import structural_rules as _structural_rules  # noqa: F401
from jaxparadigm.autodiff.forward_mode import jacfwd, jvp
from jaxparadigm.autodiff.function import Function
from jaxparadigm.autodiff.graph import Graph, trace
from jaxparadigm.autodiff.growth import graph_growth
from jaxparadigm.autodiff.registry import (
    MissingJVPRule,
    MissingVJPRule,
    get_jvp,
    get_vjp,
    register_jvp,
    register_vjp,
    registered_jvp_primitives,
    registered_primitives,
)
from jaxparadigm.autodiff.reverse_mode import grad, value_and_grad, vjp

__all__ = [
    "Function",
    "Graph",
    "MissingJVPRule",
    "MissingVJPRule",
    "get_jvp",
    "get_vjp",
    "func",
    "grad",
    "graph_growth",
    "jacfwd",
    "jvp",
    "register_jvp",
    "register_vjp",
    "registered_jvp_primitives",
    "registered_primitives",
    "tape",
    "trace",
    "value_and_grad",
    "vjp",
]
