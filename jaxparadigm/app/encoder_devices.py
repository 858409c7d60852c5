"""The MiniLM encoder's micro-batches spread over this process's CPU devices (C5.2).

One XLA:CPU device runs a forward's elementwise loops (GELU, softmax, LayerNorm) one at a time, so
a 2-core machine encodes on one core. With ``D`` host devices (``--cpu-devices``, chosen before
JAX starts, :mod:`jaxparadigm.app.cpu_devices`) the encoder sends micro-batch ``b`` to device
``b % D`` with one forward in flight per device: the same embeddings bit for bit
(:class:`~jaxparadigm.retrieval.encoder.sentence_encoder.SentenceEncoder`), ``D`` forwards at once.
Measured (benchmarks/RESULTS.md): ``index build docs``, 1,809 passages, 101.5 s on two devices
vs 146.2 s on one (1.44x).

Used by ``jaxparadigm index build|add`` (``devices`` = their ``--cpu-devices``) and by ``run``'s
retrieval task (every CPU device of the process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["encoder_on_cpu_devices", "process_cpu_devices"]


@contextlib.contextmanager
def encoder_on_cpu_devices(encoder, devices: int | None) -> Iterator[str]:
    """``encoder``'s micro-batches sent in turn to the first ``devices`` local CPU devices while
    the block runs; yields the words for a summary (``" on 2 CPU devices"``; ``""`` for one
    device). The encoder's devices are restored after, also on an error. ``None``, 1, or a
    backend other than the CPU: the encoder's own devices, unchanged."""
    import jax

    before = encoder.devices
    if devices is None or devices < 2 or jax.default_backend() != "cpu":
        yield ""
        return
    encoder.devices = jax.local_devices()[:devices]
    try:
        yield f" on {len(encoder.devices)} CPU devices"
    finally:
        encoder.devices = before


def process_cpu_devices() -> int | None:
    """The number of local devices when JAX's default backend is the CPU, else ``None`` (a GPU
    or TPU process encodes on the encoder's own device)."""
    import jax

    return len(jax.local_devices()) if jax.default_backend() == "cpu" else None
