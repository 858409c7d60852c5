"""Train the two-spirals MLP through the library API (no CLI): config -> train -> numbers.

python examples/train_spirals.py
"""

from jaxparadigm.app.train_plots import plot_training
from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import config_from_dict

cfg = config_from_dict(
    {
        "name": "example_spirals",
        "model": {"kind": "mlp", "hidden": [64, 64]},
        "data": {"kind": "spirals", "noise": 0.05},
        "optim": {"name": "adamw", "learning_rate": 0.01, "weight_decay": 1e-4},
        "train": {"steps": 600, "eval_every": 100},
    }
)
result = train(cfg, plot=plot_training)  # the library draws nothing unless given a plot function
print(f"final eval: {result.final_eval}")
print(f"throughput: {result.steps_per_second:.0f} steps/s; metrics + plots in {result.run_dir}")
