"""The C4.2 (Adam nu dtype) and C4.3 (counter overflow) experiments, called as library functions.

python examples/mixed_precision_and_overflow.py
"""

from pathlib import Path

from jaxparadigm.app.tasks import TASKS
from jaxparadigm.config import load_config

configs = Path(__file__).resolve().parent.parent / "configs"
for name, overrides in [("overflow", []), ("mixed_precision", ["train.steps=200"])]:
    cfg = load_config(configs / f"{name}.yaml", overrides)
    report = TASKS[cfg.task](cfg)
    print(f"{name}: {report}")
    print("\n".join(report.read_text().splitlines()[:12]))
