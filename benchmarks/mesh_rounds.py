"""``--mesh`` of benchmarks/train_bench.py: the charlm step on each ``fsdp x tensor`` mesh shape (C5.2).

On ``--devices K`` devices (forced host devices on a CPU, default 8) the charlm model
(configs/charlm_pydoc.yaml: d_model 64, 4 heads, MLP hidden 256, vocabulary 256, batch 32) is
trained with ``train.sharding.mode=fsdp_tensor`` on each shape of ``--mesh`` (``F x T``: fsdp F,
tensor T, ``F T = K``; default every shape whose T divides the 4 heads: ``8x1,4x2,2x4`` on 8),
next to one device (mode ``none``) and the 1-D ``fsdp`` layout over the K devices. Each state is
made the way ``jaxparadigm run`` makes it (``initial_state.model_in_layout`` and
``initial_state.initial_state``: born in its layout). Rounds are interleaved (train_bench's
``_interleaved``) and medians reported:

* steps/s and the ratio to one device (timings: on a quiet machine only);
* the state's bytes per device, busiest device (``sharding.bytes_per_device`` over the whole
  train state: parameters, optimiser state, scalars) and as a fraction of the state's total,
  next to ``1 / K``; the parameters' and the optimiser state's share of it;
* the compiled step's collectives (count per kind).

The byte figures are the layout's and do not depend on the machine's load; the steps/s do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "charlm_pydoc.yaml"


def mesh_shapes(text: str | None, devices: int, heads: int) -> list[tuple[int, int]]:
    """``[(F, T), ...]`` of ``--mesh`` (``"4x2,2x4"``), or by default every ``F x T = devices``
    whose T divides ``heads``; ``ValueError`` for a shape that does not multiply to ``devices``."""
    if text is None:
        return [
            (devices // t, t) for t in range(1, devices + 1) if devices % t == 0 and heads % t == 0
        ]
    shapes = []
    for part in text.split(","):
        f, _, t = part.strip().partition("x")
        if not (f.isdigit() and t.isdigit()) or int(f) * int(t) != devices:
            raise ValueError(
                f"--mesh: got {part.strip()!r}, expected FxT with F * T = {devices} devices "
                "(e.g. 4x2)"
            )
        shapes.append((int(f), int(t)))
    return shapes


def _runner(cfg, dataset, batches, sharding) -> tuple[Callable[[int], float], dict]:
    """A stepping closure for ``sharding`` (a ShardingSettings) and its byte/collective figures."""
    import jax
    from flax import nnx
    from train_bench import _stepper

    from jaxparadigm.build import build_model, train_settings
    from jaxparadigm.optim import chain_for
    from jaxparadigm.train.initial_state import initial_state, model_in_layout
    from jaxparadigm.train.objectives import next_byte_loss
    from jaxparadigm.train.sharding import bytes_per_device, layout_figures, shard_batch
    from jaxparadigm.train.train_step import make_train_step

    settings = dataclasses.replace(train_settings(cfg), sharding=sharding)
    tx = chain_for(cfg.optim)
    model = model_in_layout(lambda: build_model(cfg.model, dataset, cfg.train.seed), sharding)
    graphdef, variables = nnx.split(model)
    state, layout = initial_state(variables, tx, settings)
    del model, variables
    step = make_train_step(graphdef, next_byte_loss, tx, layout=layout)
    if layout is None:
        placed = [jax.device_put(b) for b in batches]
    else:
        placed = [shard_batch(b, layout.mesh) for b in batches]
    total = lambda tree: sum(x.nbytes for x in jax.tree_util.tree_leaves(tree))
    busiest = lambda tree: max(bytes_per_device(tree).values())
    fig = {
        "state_bytes_per_device": busiest(state),
        "state_bytes_total": total(state),
        "params_bytes_per_device": busiest(state.params),
        "opt_state_bytes_per_device": busiest(state.opt_state),
        "collectives": {},
    }
    if layout is not None:
        hlo = step.lower(state, placed[0]).compile().as_text()
        ops = layout_figures(layout, state, hlo)["collectives"]
        fig["collectives"] = {k: v["count"] for k, v in ops.items() if v["count"]}
    return _stepper(step, state, placed), fig


def mesh_bench(args) -> dict:
    """Steps/s and bytes per device of each mesh shape (module docstring); prints a table."""
    from train_bench import _force_devices, _interleaved, _run_facts

    devices = args.devices or 8
    _force_devices(devices)
    import jax

    from jaxparadigm.config import load_config
    from jaxparadigm.train.data import build_dataset
    from jaxparadigm.train.settings import ShardingSettings

    cfg = load_config(CONFIG)
    dataset = build_dataset(cfg.data)
    batches = [dataset.batch(i) for i in range(8)]
    shapes = mesh_shapes(args.mesh_shapes, jax.device_count(), cfg.model.num_heads)
    layouts = {
        "one device": ShardingSettings(mode="none"),
        "fsdp (1-D)": ShardingSettings(mode="fsdp"),
    }
    for f, t in shapes:
        layouts[f"{f}x{t}"] = ShardingSettings(mode="fsdp_tensor", tensor=t)
    runners, figures = {}, {}
    for name, sharding in layouts.items():
        runners[name], figures[name] = _runner(cfg, dataset, batches, sharding)
        runners[name](2)  # compile / warm up
    med, load = _interleaved(runners, args.rounds, args.steps)
    results = {
        **_run_facts(load),
        "steps_per_s": med,
        "ratio_vs_one_device": {k: v / med["one device"] for k, v in med.items()},
        "bytes": figures,
    }
    print(f"charlm step per mesh shape ({results['device']}, load {load:.1f}; medians of "
          f"{args.rounds}; steps/s mean something on a quiet machine only)")  # fmt: skip
    print(f"  cpu: {results['cpu']}")
    n = jax.device_count()
    for name in layouts:
        fig = figures[name]
        share = fig["state_bytes_per_device"] / fig["state_bytes_total"]
        print(
            f"  {name:11s} {med[name]:7.2f} steps/s {med[name] / med['one device']:5.2f}x one  "
            f"state {fig['state_bytes_per_device']:>8,} B/device = {share:.3f} of "
            f"{fig['state_bytes_total']:,} (1/{n} = {1 / n:.3f}; params "
            f"{fig['params_bytes_per_device']:,}, opt {fig['opt_state_bytes_per_device']:,})  "
            f"{fig['collectives']}"
        )
    return results
