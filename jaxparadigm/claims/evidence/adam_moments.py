"""C4.2's evidence: how much of Adam's second moment ``nu`` a narrow storage dtype loses.

``v <- b2 v + (1 - b2) g^2`` is computed in float32 and only stored in ``nu_dtype``. After steps
with non-zero gradients an entry of ``nu`` that is exactly 0 is one that underflowed in storage:
float16 rounds values below half its smallest subnormal ``2**-24 ~ 6e-8`` to 0 (with
``b2 = 0.999`` a first step with ``|g| < ~5e-3`` leaves ``nu = 0``, and Adam then divides by
``eps`` alone), while bfloat16 keeps float32's exponent range. The storage figures come from the
library's general ``jaxparadigm.optim.adam_state_report``; this module reads them as the claim's.
"""

from __future__ import annotations

from typing import Any

from jaxparadigm.optim import adam_state_report


def nu_storage_evidence(state: Any) -> dict[str, Any]:
    """C4.2's figures for one Adam state after steps with non-zero gradients.

    ``mu_dtype`` (``mu``'s stored dtype), ``nu_bytes`` (bytes ``nu`` stores) and
    ``nu_underflow_fraction`` (fraction of ``nu`` entries that are exactly 0, i.e. underflowed
    in storage, since every gradient was non-zero). ``state``: any optimiser state holding one
    Adam state (``ValueError`` from ``adam_state_report`` otherwise).
    """
    report = adam_state_report(state)
    return {
        "mu_dtype": report["mu"]["dtype"],
        "nu_bytes": report["nu"]["bytes"],
        "nu_underflow_fraction": report["nu"]["zero_fraction"],
    }
