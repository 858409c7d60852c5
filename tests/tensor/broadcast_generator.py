"""Hypothesis strategy of broadcast cases: shapes drawn to broadcast, then sometimes broken.

A case is a list of 1-5 shapes. Each is a suffix of one drawn result shape with some dims
replaced by 1 (so they broadcast), and with a few perturbations: a dim changed to another size
(usually a conflict), a negative dim, an empty (0) dim, a scalar shape ``()``, or an int instead
of a tuple, or a 1-D integer numpy array instead of a tuple (both accepted by numpy).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


@st.composite
def broadcast_cases(draw) -> list:
    result = draw(st.lists(st.integers(0, 5), min_size=0, max_size=5))
    shapes: list = []
    for _ in range(draw(st.integers(1, 5))):
        keep = draw(st.integers(0, len(result)))
        shape = [n if draw(st.booleans()) else 1 for n in result[len(result) - keep :]]
        if shape and draw(st.integers(0, 5)) == 0:
            i = draw(st.integers(0, len(shape) - 1))
            shape[i] = draw(st.integers(-2, 6))
        form = draw(st.sampled_from(["tuple", "tuple", "tuple", "list", "array", "int"]))
        if form == "int" and len(shape) == 1:
            shapes.append(shape[0])
        elif form == "array":
            shapes.append(np.asarray(shape, dtype=np.int64))
        elif form == "list":
            shapes.append(list(shape))
        else:
            shapes.append(tuple(shape))
    return shapes
