"""Schema validation and drift detection on their own (C5.1).

python examples/data_checks.py
"""

import numpy as np

from jaxparadigm.train.data import drift_report, two_spirals, validate_batch

x, y = two_spirals(512, noise=0.05, seed=0)
schema = {"x": ((None, 2), np.float32), "y": ((None,), np.int32, (0, 1))}
validate_batch({"x": x, "y": y}, schema)
print("clean batch: valid")

broken = x.copy()
broken[3, 1] = np.nan
try:
    validate_batch({"x": broken, "y": y}, schema)
except ValueError as err:
    print(f"corrupted batch refused: {err}")

later, _ = two_spirals(512, noise=0.05, seed=1)
later[:, 1] += 0.3  # the sensor behind feature 1 drifted
print(drift_report(x, later))
