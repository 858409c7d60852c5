"""jaxparadigm: five misunderstood deep-learning concepts rebuilt as small functional JAX code.

Subpackages (import them directly; ``import jaxparadigm`` stays cheap):

* ``jaxparadigm.tensor``    storage + strided views, broadcast, aliasing, scatter, transfers (C2.x)
* ``jaxparadigm.autodiff``  tape, jaxpr graph + VJP registry, Function, torch.func-style API (C3.x)
* ``jaxparadigm.optim``     sgd, adam, schedules, clipping, counters (C4.x)
* ``jaxparadigm.models``    flax NNX models (MLP, transformer LM, MiniLM encoder)
* ``jaxparadigm.retrieval`` keyword vs semantic search (C1.x)
* ``jaxparadigm.train``     data checks, train loop, guard, checkpoints, sharding (C5.x)
* ``jaxparadigm.claims``    one experiment per claim -> computed verdict
"""

__version__ = "0.1.0"
