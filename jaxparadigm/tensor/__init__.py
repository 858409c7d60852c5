"""jaxparadigm.tensor: tensors as storage + views, broadcasting, aliasing vs immutability.

Claims C2.1 (view over a flat storage), C2.3 (asynchronous host->device copies), C2.4
(broadcasting rules, partially unknown shapes) and C2.5 (in-place aliasing vs scatter updates).
"""

from jaxparadigm.tensor.broadcast import broadcast_shapes, explain_broadcast
from jaxparadigm.tensor.memory import Handle, Memory
from jaxparadigm.tensor.scatter import scatter_nd_update, scatter_nd_update_inplace
from jaxparadigm.tensor.strided import as_strided
from jaxparadigm.tensor.torch_index import torch_index_steps
from jaxparadigm.tensor.transfer import transfer_profile
from jaxparadigm.tensor.view import View

__all__ = [
    "Handle",
    "Memory",
    "View",
    "as_strided",
    "broadcast_shapes",
    "explain_broadcast",
    "scatter_nd_update",
    "scatter_nd_update_inplace",
    "torch_index_steps",
    "transfer_profile",
]
