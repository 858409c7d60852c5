"""jaxparadigm.autodiff.rules: every primitive's gradient rules, one family per module (claim C3.2).

A family's VJP rules and JVP rules sit side by side: ``<family>.py`` (reverse mode, plus any JVP
rule written next to its VJP) and ``<family>_jvp.py`` (forward mode). ``tangents.py`` and
``scatter_dims.py`` hold helpers the rules share. This module is the one place that imports
(and so registers) every rule module; ``import jaxparadigm.autodiff`` imports it.
"""

from jaxparadigm.autodiff.rules import (  # noqa: F401  (each import registers its rules)
    call,
    control_flow,
    control_flow_jvp,
    conv,
    decomposition,
    elementwise,
    elementwise_jvp,
    indexing,
    indexing_jvp,
    linalg,
    reduction,
    reduction_jvp,
    sorting,
    sorting_jvp,
    special,
    structural,
    structural_jvp,
)

__all__: list[str] = []
