"""Chapter 2 experiments: tensors as views (C2.1), host->device copies (C2.3), broadcasting (C2.4),
aliasing vs immutability (C2.5). Each runs our ``jaxparadigm.tensor`` code and, when ``import torch``
works, the article's own PyTorch snippet."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxparadigm.claims.ledger import experiment
from jaxparadigm.claims.torch_side import torch_or_none
from jaxparadigm.tensor import (
    Memory,
    View,
    as_strided,
    broadcast_shapes,
    explain_broadcast,
    scatter_nd_update,
    scatter_nd_update_inplace,
    transfer_profile,
)

# --- C2.1 ------------------------------------------------------------------------------------


@experiment(
    "C2.1",
    "A 12-element storage viewed with offset 2, size (2,3), stride (3,1) gives rows [2,3,4], [5,6,7].",
)
def c2_1():
    storage = np.arange(12, dtype=np.float32)
    view = View((2, 3), (3, 1), 2)
    ours = np.asarray(view.materialize(storage)).tolist()
    numpy_ref = np.lib.stride_tricks.as_strided(
        storage[2:], shape=(2, 3), strides=(3 * storage.itemsize, storage.itemsize)
    ).tolist()
    ev = {
        "expected": [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]],
        "ours": ours,
        "as_strided": np.asarray(as_strided(storage, (2, 3), (3, 1), 2)).tolist(),
        "numpy": numpy_ref,
        "view_is_contiguous": view.is_contiguous(),
        "transpose_strides": list(view.transpose(0, 1).strides),
    }
    torch = torch_or_none()
    if torch is not None:  # the article's snippet, with the untyped storage API of current torch
        s = torch.arange(12, dtype=torch.float32)
        t = torch.tensor([], dtype=torch.float32).set_(s.untyped_storage(), 2, (2, 3), (3, 1))
        ev["torch"] = t.tolist()
        ev["torch_stride"] = list(t.stride())
    return ev


@c2_1.decide
def _(ev):
    results = [ev["ours"], ev["as_strided"], ev["numpy"]] + ([ev["torch"]] if "torch" in ev else [])
    if all(r == ev["expected"] for r in results):
        return "holds", (
            "View((2,3), strides (3,1), offset 2) over storage 0..11 materialises [[2,3,4],[5,6,7]] "
            f"in ours, numpy{', torch' if 'torch' in ev else ''}; movement ops only change metadata "
            f"(transpose -> strides {ev['transpose_strides']})."
        )
    return "fails", f"materialised {ev['ours']} (numpy {ev['numpy']}), expected {ev['expected']}."


# --- C2.3 ------------------------------------------------------------------------------------


@experiment(
    "C2.3", "Host-to-device copies are asynchronous: the host is not blocked until it waits."
)
def c2_3():
    prof = transfer_profile(64 * 2**20)
    ev = {k: prof[k] for k in ("platform", "nbytes", "h2d_dispatch_s", "h2d_ready_s")}
    ev.update(
        dispatch_fraction=prof["h2d_dispatch_fraction"],
        zero_copy_h2d=prof["zero_copy_h2d"],
        h2d_gbps=prof["h2d_gbps"],
        d2h_gbps=prof["d2h_gbps"],
    )
    torch = torch_or_none()
    ev["torch_cuda_available"] = bool(torch is not None and torch.cuda.is_available())
    if ev["torch_cuda_available"]:
        ev.update(_torch_h2d_fractions(torch, prof["nbytes"]))
    return ev


def _torch_h2d_fractions(torch, nbytes: int) -> dict:
    """Fraction of the copy time the host spends inside ``.to('cuda')``: pageable default vs pinned
    + ``non_blocking=True`` (medians of 5)."""
    import statistics
    import time

    def frac(src, **kw):
        out = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            y = src.to("cuda", **kw)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            out.append((t1 - t0) / (t2 - t0))
            del y
        return statistics.median(out)

    x = torch.empty(nbytes, dtype=torch.uint8)
    return {
        "torch_default_dispatch_fraction": frac(x),
        "torch_pinned_nonblocking_dispatch_fraction": frac(x.pin_memory(), non_blocking=True),
    }


@c2_3.decide
def _(ev):
    frac, plat = ev["dispatch_fraction"], ev["platform"]
    if ev["zero_copy_h2d"]:
        return "conditional", (
            f"On {plat} device_put aliased the host buffer (zero copy): there was no copy to overlap."
        )
    if frac >= 0.5:
        return "fails", (
            f"On {plat} device_put blocked for {frac:.0%} of the transfer time: the host was not "
            "freed before the copy finished."
        )
    jax_part = (
        f"JAX: device_put returned after {frac:.0%} of the {plat} transfer time; the host waits "
        "only at sync points (block_until_ready, np.asarray)."
    )
    torch_default = ev.get("torch_default_dispatch_fraction")
    if torch_default is None:
        return "holds", jax_part + " PyTorch side not measured (no CUDA device here)."
    if torch_default >= 0.5:
        return "conditional", jax_part + (
            f" PyTorch's default .to('cuda') blocked for {torch_default:.0%}; only pinned memory "
            f"with non_blocking=True returned early "
            f"({ev['torch_pinned_nonblocking_dispatch_fraction']:.0%}), a condition the article omits."
        )
    return "holds", jax_part + f" PyTorch's .to('cuda') also returned early ({torch_default:.0%})."


# --- C2.4 ------------------------------------------------------------------------------------


@experiment(
    "C2.4",
    "Broadcasting right-aligns shapes; dims equal or 1: (3,1)x(1,4)->(3,4), (2,1,5)x(5,)->(2,1,5).",
)
def c2_4():
    cases = [((3, 1), (1, 4)), ((2, 1, 5), (5,))]
    ev = {
        "article_cases": [[list(a), list(b)] for a, b in cases],
        "ours": [list(broadcast_shapes(a, b)) for a, b in cases],
        "numpy": [list(np.broadcast_shapes(a, b)) for a, b in cases],
        "expected": [[3, 4], [2, 1, 5]],
        "partial_shape": [list(broadcast_shapes((None, 1, 5), (3, None, 5)))],
        "table": explain_broadcast((2, 1, 5), (5,)),
    }
    rng = np.random.default_rng(0)
    agree = trials = 0
    for _ in range(2000):
        shapes = [
            tuple(int(d) for d in rng.choice([1, 2, 3], size=rng.integers(0, 4))) for _ in range(2)
        ]
        try:
            ref = np.broadcast_shapes(*shapes)
        except ValueError:
            ref = "error"
        try:
            got = broadcast_shapes(*shapes)
        except ValueError:
            got = "error"
        trials += 1
        agree += got == ref
    ev["random_agreement"] = agree / trials
    ev["random_trials"] = trials
    torch = torch_or_none()
    if torch is not None:
        ev["torch"] = [list(torch.broadcast_shapes(a, b)) for a, b in cases]
    return ev


@c2_4.decide
def _(ev):
    refs = [ev["ours"], ev["numpy"]] + ([ev["torch"]] if "torch" in ev else [])
    if all(r == ev["expected"] for r in refs) and ev["random_agreement"] == 1.0:
        return "holds", (
            f"(3,1)x(1,4)->(3,4) and (2,1,5)x(5,)->(2,1,5) in ours, numpy"
            f"{', torch' if 'torch' in ev else ''}; {ev['random_trials']} random shape pairs agree "
            f"with numpy; unknown dims (TF partial shapes) resolve to {ev['partial_shape'][0]}."
        )
    return "fails", f"broadcast results {ev['ours']} vs numpy {ev['numpy']}."


# --- C2.5 ------------------------------------------------------------------------------------


@experiment(
    "C2.5",
    "b=a.view(-1); b.set_([9,8,7]) leaves a==[9,8,7]; scatter_nd_update returns a new tensor.",
)
def c2_5():
    mem, a = Memory().tensor(np.array([1, 2, 3], dtype=np.int32))
    b = mem.view(a, -1)
    mem_set, b_set = mem.set_(b, np.array([9, 8, 7], dtype=np.int32))
    mem_copy = mem.copy_(b, np.array([9, 8, 7], dtype=np.int32))
    x = jnp.array([1, 2, 3], dtype=jnp.int32)
    y = scatter_nd_update(x, np.array([[0]]), np.array([9], dtype=np.int32))
    x2 = jnp.array([1, 2, 3], dtype=jnp.int32)
    y2 = scatter_nd_update_inplace(x2, np.array([[0]]), np.array([9], dtype=np.int32))
    ev = {
        "ours_a_after_set_": np.asarray(mem_set.read(a)).tolist(),
        "ours_b_after_set_": np.asarray(mem_set.read(b_set)).tolist(),
        "ours_a_after_copy_": np.asarray(mem_copy.read(a)).tolist(),
        "scatter_input_after": np.asarray(x).tolist(),
        "scatter_result": np.asarray(y).tolist(),
        "scatter_new_buffer": x.unsafe_buffer_pointer() != y.unsafe_buffer_pointer(),
        "inplace_result": np.asarray(y2).tolist(),
        "inplace_input_deleted": x2.is_deleted(),
    }
    torch = torch_or_none()
    if torch is not None:  # the article's snippet, verbatim
        ta = torch.tensor([1, 2, 3])
        tb = ta.view(-1)
        tb.set_(torch.tensor([9, 8, 7]))
        ev["torch_a_after_set_"] = ta.tolist()
        ta2 = torch.tensor([1, 2, 3])
        ta2.view(-1).copy_(torch.tensor([9, 8, 7]))
        ev["torch_a_after_copy_"] = ta2.tolist()
    return ev


@c2_5.decide
def _(ev):
    a_after = ev.get("torch_a_after_set_", ev["ours_a_after_set_"])
    scatter_new = (
        ev["scatter_input_after"] == [1, 2, 3]
        and ev["scatter_result"] == [9, 2, 3]
        and ev["scatter_new_buffer"]
    )
    source = "PyTorch" if "torch_a_after_set_" in ev else "our PyTorch aliasing model"
    if a_after == [9, 8, 7] and scatter_new:
        return (
            "holds",
            f"set_ on the view wrote through to a ({source}); scatter returned a new tensor.",
        )
    if a_after == [1, 2, 3]:
        return "fails", (
            f"In {source}, b.set_(...) rebinds only b to a new storage: a stays {a_after}. "
            f"It is copy_ that writes through every alias (a -> {ev['ours_a_after_copy_']}). "
            f"The scatter half holds: scatter_nd_update returned a new array in a new buffer"
            f"{'' if scatter_new else ' (NOT observed)'}; the in-place variant donates the input "
            f"(input deleted: {ev['inplace_input_deleted']}) instead of aliasing it."
        )
    return "fails", f"after set_, a == {a_after}; expected [9,8,7] per the article."
