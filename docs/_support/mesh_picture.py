"""Draw docs/_static/mesh_axes.png: which device of a 4 x 2 ``(fsdp, tensor)`` mesh holds which
block of the charlm transformer's arrays (docs/guides/mesh.md).

The blocks are read from the library's own layout, not drawn by hand: 8 forced CPU devices,
``mesh_for("fsdp_tensor", 2)``, ``step_layout`` of the charlm model's abstract train state (its
logical axis names mapped by ``models.partitioning.RULES``), and each array's
``sharding.devices_indices_map``. Run: ``python docs/_support/mesh_picture.py [OUT.png]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def layout():
    """``(mesh, shardings of params, batch sharding)`` of charlm on a 4 x 2 mesh."""
    import jax
    from flax import nnx

    from jaxparadigm.build import build_model
    from jaxparadigm.config import load_config
    from jaxparadigm.models.partitioning import logical_names
    from jaxparadigm.optim import chain_for
    from jaxparadigm.train.data import build_dataset
    from jaxparadigm.train.sharding import mesh_for, step_layout
    from jaxparadigm.train.train_step import init_train_state

    cfg = load_config(ROOT / "configs" / "charlm_pydoc.yaml")
    dataset = build_dataset(cfg.data)
    variables = nnx.split(nnx.eval_shape(lambda: build_model(cfg.model, dataset, 0)))[1]
    params = nnx.to_pure_dict(variables)
    tx = chain_for(cfg.optim)
    state = jax.eval_shape(lambda p: init_train_state(p, tx, 0), params)
    mesh = mesh_for("fsdp_tensor", 2)
    names = logical_names(variables)
    lay = step_layout(state, mesh, "fsdp_tensor", cfg.train.sharding.min_size, names)
    return mesh, lay.state.params, lay.batch, params, cfg


def _blocks(ax, sharding, shape, title, names, colors):
    """One array as a rectangle of blocks, each labelled with the devices that hold it."""
    from matplotlib.patches import Rectangle

    held: dict = {}
    for device, index in sharding.devices_indices_map(shape).items():
        key = tuple((s.start or 0, s.stop or n) for s, n in zip(index, shape, strict=True))
        held.setdefault(key, []).append(device.id)
    rows, cols = shape if len(shape) == 2 else (shape[0], 1)
    for key, ids in held.items():
        (r0, r1), (c0, c1) = key if len(key) == 2 else (key[0], (0, 1))
        color = colors[min(ids) % len(colors)]
        box = Rectangle((c0, rows - r1), c1 - c0, r1 - r0, facecolor=color, edgecolor="black")
        ax.add_patch(box)
        label = ",".join(f"d{i}" for i in sorted(ids))
        ax.text((c0 + c1) / 2, rows - (r0 + r1) / 2, label, ha="center", va="center", fontsize=8)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(f"{names[0]} ({rows})", fontsize=8)
    if len(shape) == 2:
        ax.set_xlabel(f"{names[1]} ({cols})", fontsize=8)


def draw(out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    mesh, params, batch, abstract, cfg = layout()
    colors = plt.get_cmap("tab10").colors
    ratios = {"width_ratios": [1.3, 1, 1, 1, 0.35]}
    fig, axes = plt.subplots(1, 5, figsize=(14, 3.6), gridspec_kw=ratios)
    grid = axes[0]
    for (i, j), device in np.ndenumerate(mesh.devices):
        color = colors[device.id % 10]
        grid.add_patch(plt.Rectangle((j, 3 - i), 1, 1, facecolor=color, edgecolor="black"))
        grid.text(j + 0.5, 3.5 - i, f"d{device.id}", ha="center", va="center")
    grid.set_xlim(0, 2)
    grid.set_ylim(0, 4)
    grid.set_xticks([0.5, 1.5], ["tensor 0", "tensor 1"], fontsize=8)
    grid.set_yticks([3.5, 2.5, 1.5, 0.5], [f"fsdp {i}" for i in range(4)], fontsize=8)
    grid.set_title("mesh fsdp 4 x tensor 2\nfsdp: batch rows, model width\n"
                   "tensor: heads, MLP hidden, vocab", fontsize=9)  # fmt: skip
    block = params["blocks"][0]
    shape = lambda tree: tuple(tree.shape)
    fc1 = abstract["blocks"][0]["fc1"]["kernel"]
    qkv = abstract["blocks"][0]["attn"]["qkv"]["kernel"]
    emb = abstract["embed"]["embedding"]
    panels = [
        (block["fc1"]["kernel"], fc1, "fc1 kernel (embed, mlp)", ("embed", "mlp")),
        (block["attn"]["qkv"]["kernel"], qkv, "qkv kernel (embed, heads)\ncolumns [q | k | v]",
         ("embed", "heads")),
        (params["embed"]["embedding"], emb, "token embedding (vocab, embed)", ("vocab", "embed")),
    ]  # fmt: skip
    for ax, (sharding, array, title, names) in zip(axes[1:4], panels, strict=True):
        _blocks(ax, sharding, shape(array), title, names, colors)
    rows = (cfg.data.batch_size,)
    _blocks(axes[4], batch, rows, "batch", ("rows",), colors)
    fig.suptitle("charlm on 8 devices, train.sharding.mode=fsdp_tensor, tensor=2: "
                 "each block is held by the devices named in it", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "_static" / "mesh_axes.png"
    print(draw(target))
