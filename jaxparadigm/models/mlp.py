"""A multilayer perceptron in Flax NNX: the classifier/regressor of the training engine (C5.1).

    h_0 = x,   h_{i+1} = gelu(h_i W_i + b_i),   logits = h_L W_out + b_out

Parameters are stored in float32; ``dtype`` is the compute dtype (inputs and weights are cast to it
for the matmuls, the output is returned in float32 so the loss is always computed in float32).

The layers name their dimensions as Megatron's MLP blocks alternate (:mod:`jaxparadigm.models.
partitioning`): layer ``i`` has kernel ``(embed, mlp)`` and bias ``(mlp,)`` for even ``i``,
``(mlp, embed)`` and ``(embed,)`` for odd ``i``; the head's kernel is ``(<its input's name>,
None)``, its bias ``(None,)`` (the few outputs stay whole: naming them ``vocab`` would put
``tensor`` twice on a kernel whose input is ``mlp``); the hidden activations are ``(batch, mlp)``
after an even layer and ``(batch, None)`` after an odd one. Outside a layout with logical rules
this changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import chex
import jax
import jax.numpy as jnp
from flax import nnx

from jaxparadigm.common.numbers import check_int
from jaxparadigm.models.partitioning import axes, constrain

_DTYPES = ("float32", "bfloat16", "float16")
#: The logical names of the kernel of an even / odd layer (module docstring).
_NAMES = (("embed", "mlp"), ("mlp", "embed"))


class MLP(nnx.Module):
    """``MLP(in_features, hidden, num_outputs)``: Linear+GELU per hidden width, then a Linear head.

    Serves C5.1 (the model the guarded, checkpointed, sharded training engine trains). Call with
    ``x: [batch, in_features]`` to get ``[batch, num_outputs]`` float32 outputs.
    """

    def __init__(
        self,
        in_features: int,
        hidden: Sequence[int],
        num_outputs: int,
        *,
        dtype: str = "float32",
        rngs: nnx.Rngs,
    ):
        in_features = check_int("in_features", in_features, 1, error=ValueError)
        num_outputs = check_int("num_outputs", num_outputs, 1, error=ValueError)
        hidden = tuple(
            check_int(f"hidden[{i}]", w, 1, error=ValueError) for i, w in enumerate(hidden)
        )
        if dtype not in _DTYPES:
            raise ValueError(f"dtype: got {dtype!r}, expected one of {', '.join(_DTYPES)}")
        self.in_features = in_features
        self.num_outputs = num_outputs
        self.compute_dtype = jnp.dtype(dtype)
        widths = (in_features, *hidden)
        names = [_NAMES[i % 2] for i in range(len(hidden))]
        self.layers = nnx.List(
            [
                nnx.Linear(
                    a,
                    b,
                    dtype=self.compute_dtype,
                    param_dtype=jnp.float32,
                    rngs=rngs,
                    kernel_metadata=axes(*n),
                    bias_metadata=axes(n[1]),
                )
                for a, b, n in zip(widths[:-1], widths[1:], names, strict=True)
            ]
        )
        last = names[-1][1] if names else "embed"
        self.head = nnx.Linear(
            widths[-1],
            num_outputs,
            dtype=self.compute_dtype,
            param_dtype=jnp.float32,
            rngs=rngs,
            kernel_metadata=axes(last, None),
            bias_metadata=axes(None),
        )

    def __call__(self, x: jax.Array) -> jax.Array:
        chex.assert_rank(x, 2)
        if x.shape[-1] != self.in_features:
            raise ValueError(
                f"x: got shape {x.shape}, expected [batch, {self.in_features}] (in_features)"
            )
        h = x.astype(self.compute_dtype)
        for i, layer in enumerate(self.layers):
            h = constrain(jax.nn.gelu(layer(h)), ("batch", "mlp" if i % 2 == 0 else None))
        return self.head(h).astype(jnp.float32)
