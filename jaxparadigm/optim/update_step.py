"""One optimiser step as one compiled program: ``update`` then ``apply_updates`` (C4.1, C4.2).

``update_step(tx)`` is ``jax.jit`` of ``(params, state, grads) -> (params', state')`` with
``params' = params + u`` where ``(u, state') = tx.update(grads, state, params)``, the params and
the state donated (their buffers are written in place). The arithmetic is ``tx``'s own: the
results are bitwise those of jitting the two calls by hand (tested for Adam against optax).

**Order of the loops (XLA:CPU).** An elementwise update such as Adam compiles, per leaf, to
three single-output loops: ``m'`` (reads ``m, g``), ``v'`` (reads ``v, g``) and ``p'`` (reads
``p, m', v'``), 40 bytes per float32 parameter in all, each loop split over the cores
(``outer_dimension_partitions`` in the compiled HLO). XLA:CPU's default scheduler orders them
for concurrency: every leaf's ``m'`` and ``v'`` first, every ``p'`` after, so ``m'`` and ``v'``
come back from memory. On the CPU the step is compiled with :data:`CPU_COMPILER_OPTIONS` (the
memory-optimising scheduler): each leaf's three loops run one after the other, and ``p'`` reads
``m'`` and ``v'`` while they are still in cache, so a leaf whose moments fit in the cache moves
28 bytes per parameter to and from memory (read ``p, g, m, v``, write ``p, m, v``), torch's
fused Adam's count. A scheduler option is an option of one compiled program, so it holds for
this step and nothing else in the process.
"""

from __future__ import annotations

from typing import Any

import jax
import optax

__all__ = ["CPU_COMPILER_OPTIONS", "update_step"]

#: XLA options of the step on the CPU backend: the memory-optimising scheduler (module docstring).
CPU_COMPILER_OPTIONS: dict[str, Any] = {
    "xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"
}


def update_step(tx: optax.GradientTransformation, *, donate: bool = True) -> Any:
    """``jax.jit`` of ``(params, state, grads) -> (optax.apply_updates(params, u), state')``
    with ``(u, state') = tx.update(grads, state, params)``; ``donate``: params and state donated.

    Compiled with :data:`CPU_COMPILER_OPTIONS` when JAX's default backend is the CPU, with no
    options elsewhere (module docstring). ``TypeError`` unless ``tx`` is a
    ``GradientTransformation`` and ``donate`` a bool."""
    if not isinstance(tx, optax.GradientTransformation):
        raise TypeError(f"tx: got {type(tx).__name__}, expected an optax GradientTransformation")
    if not isinstance(donate, bool):
        raise TypeError(f"donate: got {donate!r}, expected a bool")

    def step(params: Any, state: Any, grads: Any) -> tuple[Any, Any]:
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    options = CPU_COMPILER_OPTIONS if jax.default_backend() == "cpu" else None
    return jax.jit(step, donate_argnums=(0, 1) if donate else (), compiler_options=options)
