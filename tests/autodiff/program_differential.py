"""Every transform of ours against jax's on one generated program, classified (issue 23).

``compare_program(program)`` runs each transform of ``jaxparadigm.autodiff.func`` -- grad,
jacrev, jacfwd, hessian, hvp, jvp, vjp, grad-of-grad (``PLAIN``), and with their options
(``OPTIONS``: has_aux for grad/jacrev/jacfwd/vjp/jvp, a subset of argnums for
grad/jacrev/jacfwd/hessian, chunk_size for jacrev/jacfwd/hessian against jax's unchunked
transform) -- eagerly and under ``jax.jit``, and ``jax.vmap`` of our grad, next to the same
transform of jax, and returns one ``Outcome`` per comparison, classed as

* ``equal``: same tree, shapes and dtypes, values within the dtype's tolerance;
* ``different``: jax answered and we answered something else (must never happen);
* ``raised``: jax answered and we raised (must not happen except ``DOCUMENTED_REFUSALS``);
* ``refused``: we raised one of the ``DOCUMENTED_REFUSALS`` (a deliberate difference);
* ``oracle_raised``: jax itself raised (e.g. reverse mode through ``while_loop``): nothing to
  compare; ours is run too and its outcome recorded in ``detail``.
"""

from __future__ import annotations

import contextlib
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import func
from tests.autodiff.program_generator import Program, build

__all__ = [
    "CLASSES",
    "DOCUMENTED_REFUSALS",
    "OPTIONS",
    "PLAIN",
    "TRANSFORMS",
    "Outcome",
    "compare_function",
    "compare_program",
]

CLASSES = ("equal", "different", "raised", "refused", "oracle_raised")
TOL = {"float32": 2e-4, "float64": 1e-9, "bfloat16": 6e-2, "complex64": 2e-4, "complex128": 1e-9}

# Deliberate differences from jax, by name: (exception type, fragment of its message) -> reason.
# None is left: complex numbers, the last one, differentiate as jax does since issue 36.
DOCUMENTED_REFUSALS: dict[tuple[str, str], str] = {}


@dataclasses.dataclass
class Outcome:
    transform: str
    jit: bool
    cls: str
    detail: str = ""


def _argnums(n):
    return 0 if n == 1 else tuple(range(n))


def _argnums_subset(n):
    """A proper or reshaped choice of inputs: ``(0,)`` (a tuple of one), ``1`` (an int, the
    second of two), ``(2, 0)`` (unsorted, of three)."""
    return {1: (0,), 2: 1}.get(n, (2, 0))


CHUNK = 3  # rows per chunk: Jacobians of 1..16 rows give one chunk, several, and a remainder


def _like(tree, rng):
    """Random normal values with the structure, shapes and dtypes of ``tree``'s leaves."""

    def one(x):
        value = rng.standard_normal(np.shape(x))
        if jnp.issubdtype(jnp.result_type(x), jnp.complexfloating):
            value = value + 1j * rng.standard_normal(np.shape(x))
        return jnp.asarray(value, jnp.result_type(x))

    return jax.tree_util.tree_map(one, tree)


def _dot(tree, weights):
    leaves = zip(jax.tree_util.tree_leaves(tree), jax.tree_util.tree_leaves(weights), strict=True)
    return sum(jnp.sum(o * w) for o, w in leaves)


def _pair(f, args, rng):
    """(ours, jax's, arguments) for every transform of ``f`` at ``args`` (pytrees allowed)."""
    n = len(args)
    nums = _argnums(n)
    out = jax.eval_shape(f, *args)
    w = _like(out, rng)
    loss = lambda *a: _dot(f(*a), w)
    if any(jnp.iscomplexobj(a) for a in jax.tree_util.tree_leaves(args)):
        # complex programs: real losses for grad (jax's conjugate convention), holomorphic=True
        # for the Jacobians and Hessians of the complex-valued f and of _dot(f, w)
        return _complex_pair(f, args, loss, w, rng)
    ts = tuple(_like(a, rng) for a in args)
    ct = _like(out, rng)
    w0 = _like(args[0], rng)
    stacked = jax.tree_util.tree_map(lambda a: jnp.stack([a, 0.9 * a]), args)

    def gg(grad):
        return grad(lambda *a: _dot(grad(loss)(*a), w0))  # d/d args[0] of d/d args[0]

    plain = {
        "grad": (func.grad(loss, nums), jax.grad(loss, nums), args),
        "jacrev": (func.jacrev(f, nums), jax.jacrev(f, nums), args),
        "jacfwd": (func.jacfwd(f, nums), jax.jacfwd(f, nums), args),
        "hessian": (func.hessian(loss, nums), jax.hessian(loss, nums), args),
        "hvp": (
            lambda *a: func.hvp(loss, a, ts),
            lambda *a: jax.jvp(jax.grad(loss, nums), a, ts)[1],
            args,
        ),
        "jvp": (
            lambda *a: func.jvp(f, a, ts),
            lambda *a: jax.jvp(f, a, ts),
            args,
        ),
        "vjp": (
            lambda *a: func.vjp(f, *a)[1](ct),
            lambda *a: jax.vjp(f, *a)[1](ct),
            args,
        ),
        "grad_of_grad": (gg(func.grad), gg(jax.grad), args),
        "vmap_grad": (
            jax.vmap(func.grad(loss, nums)),
            jax.vmap(jax.grad(loss, nums)),
            stacked,
        ),
    }
    return {**plain, **_with_options(f, args, loss, ts, ct)}


def _complex_pair(f, args, loss, w, rng):
    """``_pair`` for complex programs: grad of the real loss ``re <f, w>`` (jax's conjugate
    convention), ``holomorphic=True`` for Jacobians of ``f`` and Hessians of ``<f, w>`` when the
    output is complex (jax raises on a real output of complex inputs, and so do we)."""
    nums, sub = _argnums(len(args)), _argnums_subset(len(args))
    out_avals = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
    hol = all(jnp.iscomplexobj(o) for o in out_avals)
    real_loss = lambda *a: jnp.real(loss(*a))
    ts, ct = tuple(_like(a, rng) for a in args), _like(jax.eval_shape(f, *args), rng)
    w0 = _like(args[0], rng)
    stacked = jax.tree_util.tree_map(lambda a: jnp.stack([a, 0.9 * a]), args)

    def gg(grad):
        return grad(lambda *a: jnp.real(_dot(grad(real_loss)(*a), w0)))

    def with_aux(*a):
        o = f(*a)
        return o, {"out": o, "sum": jnp.sum(o)}

    jacobians = {"jacrev": (func.jacrev, jax.jacrev, f), "jacfwd": (func.jacfwd, jax.jacfwd, f)}
    jacobians["hessian"] = (func.hessian, jax.hessian, loss)
    pairs = {
        "grad": (func.grad(real_loss, nums), jax.grad(real_loss, nums)),
        "hvp": (
            lambda *a: func.jvp(func.grad(real_loss, nums), a, ts)[1],
            lambda *a: jax.jvp(jax.grad(real_loss, nums), a, ts)[1],
        ),
        "jvp": (lambda *a: func.jvp(f, a, ts), lambda *a: jax.jvp(f, a, ts)),
        "vjp": (lambda *a: func.vjp(f, *a)[1](ct), lambda *a: jax.vjp(f, *a)[1](ct)),
        "grad_of_grad": (gg(func.grad), gg(jax.grad)),
    }
    for name, (ours, ref, fn) in jacobians.items():
        pairs[name] = (ours(fn, nums, holomorphic=hol), ref(fn, nums, holomorphic=hol))
        pairs[f"{name}_argnums"] = (ours(fn, sub, holomorphic=hol), ref(fn, sub, holomorphic=hol))
        pairs[f"{name}_chunk"] = (
            ours(fn, nums, chunk_size=CHUNK, holomorphic=hol),
            ref(fn, nums, holomorphic=hol),
        )
        if name != "hessian":
            pairs[f"{name}_aux"] = (
                ours(with_aux, nums, has_aux=True, holomorphic=hol),
                ref(with_aux, nums, has_aux=True, holomorphic=hol),
            )
    out = {name: (ours, ref, args) for name, (ours, ref) in pairs.items()}
    out["vmap_grad"] = (jax.vmap(pairs["grad"][0]), jax.vmap(pairs["grad"][1]), stacked)
    for name, triple in _with_options(f, args, real_loss, ts, ct).items():
        out.setdefault(name, triple)  # grad_aux, vjp_aux, jvp_aux, grad_argnums
    return out


def _with_options(f, args, loss, ts, ct):
    """The transforms' options: ``has_aux`` (an aux pytree next to the output), a subset of
    ``argnums`` (``_argnums_subset``), ``chunk_size`` (against jax's unchunked transform)."""
    nums, sub = _argnums(len(args)), _argnums_subset(len(args))

    def with_aux(*a):
        out = f(*a)
        return out, {"out": out, "sum": jnp.sum(out)}

    loss_aux = lambda *a: (loss(*a), {"out": f(*a)})

    def vjp_aux(vjp):
        def run(*a):
            out, vjp_fn, aux = vjp(with_aux, *a, has_aux=True)
            return out, vjp_fn(ct), aux

        return run

    def jvp_aux(jvp):
        return lambda *a: jvp(with_aux, a, ts, has_aux=True)

    pairs = {
        "grad_aux": (
            func.grad(loss_aux, nums, has_aux=True),
            jax.grad(loss_aux, nums, has_aux=True),
        ),
        "jacrev_aux": (
            func.jacrev(with_aux, nums, has_aux=True),
            jax.jacrev(with_aux, nums, has_aux=True),
        ),
        "jacfwd_aux": (
            func.jacfwd(with_aux, nums, has_aux=True),
            jax.jacfwd(with_aux, nums, has_aux=True),
        ),
        "vjp_aux": (vjp_aux(func.vjp), vjp_aux(jax.vjp)),
        "jvp_aux": (jvp_aux(func.jvp), jvp_aux(jax.jvp)),
        "grad_argnums": (func.grad(loss, sub), jax.grad(loss, sub)),
        "jacrev_argnums": (func.jacrev(f, sub), jax.jacrev(f, sub)),
        "jacfwd_argnums": (func.jacfwd(f, sub), jax.jacfwd(f, sub)),
        "hessian_argnums": (func.hessian(loss, sub), jax.hessian(loss, sub)),
        "jacrev_chunk": (func.jacrev(f, nums, chunk_size=CHUNK), jax.jacrev(f, nums)),
        "jacfwd_chunk": (func.jacfwd(f, nums, chunk_size=CHUNK), jax.jacfwd(f, nums)),
        "hessian_chunk": (func.hessian(loss, nums, chunk_size=CHUNK), jax.hessian(loss, nums)),
    }
    return {name: (ours, ref, args) for name, (ours, ref) in pairs.items()}


PLAIN = ("grad", "jacrev", "jacfwd", "hessian", "hvp", "jvp", "vjp", "grad_of_grad")
OPTIONS = (
    "grad_aux",
    "jacrev_aux",
    "jacfwd_aux",
    "vjp_aux",
    "jvp_aux",
    "grad_argnums",
    "jacrev_argnums",
    "jacfwd_argnums",
    "hessian_argnums",
    "jacrev_chunk",
    "jacfwd_chunk",
    "hessian_chunk",
)
TRANSFORMS = PLAIN + OPTIONS


def _close(ours, ref, tol) -> str:
    """'' when equal within ``tol`` (relative to the reference's scale), else the reason."""
    lo, to = jax.tree_util.tree_flatten(ours)
    lr, tr = jax.tree_util.tree_flatten(ref)
    if to != tr:
        return f"tree {to} vs jax's {tr}"
    for a, b in zip(lo, lr, strict=True):
        if np.shape(a) != np.shape(b) or jnp.result_type(a) != jnp.result_type(b):
            return f"{jnp.result_type(a)}{np.shape(a)} vs jax's {jnp.result_type(b)}{np.shape(b)}"
        wide = np.complex128 if jnp.iscomplexobj(b) else np.float64
        a64, b64 = np.asarray(a, wide), np.asarray(b, wide)
        if not np.array_equal(np.isfinite(a64), np.isfinite(b64)):
            return f"non-finite pattern differs: {a64} vs jax's {b64}"
        fin = np.isfinite(b64)
        if not np.array_equal(a64[~fin], b64[~fin], equal_nan=True):
            return "non-finite values differ"
        scale = max(1.0, float(np.max(np.abs(b64[fin]), initial=0.0)))
        err = float(np.max(np.abs(a64[fin] - b64[fin]), initial=0.0))
        if err > tol * scale:
            return f"max abs error {err:.3g} > {tol:g} * {scale:.3g}"
    return ""


# XLA's cheapest CPU compilation: these programs run once, so compile time is all that counts.
_FAST = {
    "compiler_options": {
        "xla_backend_optimization_level": 0,
        "xla_llvm_disable_expensive_passes": True,
        "xla_cpu_use_fusion_emitters": False,  # the legacy emitter compiles ~1.3x faster
    }
}


def _refusal(exc) -> str | None:
    for (kind, fragment), reason in DOCUMENTED_REFUSALS.items():
        if type(exc).__name__ == kind and fragment in str(exc):
            return reason
    return None


def compare_program(program: Program, transforms=TRANSFORMS, eager=TRANSFORMS, vmap=True):
    """``compare_function`` on the generated program (float64 under ``jax.enable_x64``)."""
    wide = program.dtype in ("float64", "complex128")
    ctx = jax.enable_x64(True) if wide else contextlib.nullcontext()
    with ctx:
        f, args = build(program)
        tol = TOL[program.dtype]
        return compare_function(f, args, tol, program.seed + 1, transforms, eager, vmap)


def compare_function(f, args, tol, seed=0, transforms=TRANSFORMS, eager=TRANSFORMS, vmap=True):
    """Outcomes of every transform of ``f`` (differentiated in all of ``args``, pytrees allowed)
    under ``jax.jit``, of those in ``eager`` eagerly, and of ``vmap_grad``. jax's answers are
    computed once, under jit, for both of ours; all jitted transforms of one side share one
    compilation (per-transform only when that one raises)."""
    pairs = _pair(f, args, np.random.default_rng(seed))
    names = list(dict.fromkeys([*transforms, *eager])) + (["vmap_grad"] if vmap else [])
    refs = _jitted_all({n: pairs[n][1] for n in names}, {n: pairs[n][2] for n in names})
    jitted = [n for n in names if n in transforms or n == "vmap_grad"]
    ours_jit = _jitted_all({n: pairs[n][0] for n in jitted}, {n: pairs[n][2] for n in jitted})
    out = [_classify(n, True, refs[n], ours_jit[n], tol) for n in jitted]
    for n in eager:
        out.append(_classify(n, False, refs[n], _attempt(pairs[n][0], pairs[n][2]), tol))
    return out


def _attempt(fn, args):
    """``(True, value)`` or ``(False, exception)``."""
    try:
        return True, fn(*args)
    except Exception as exc:  # noqa: BLE001 - classified by the caller, never swallowed
        return False, exc


def _jitted_all(fns, args):
    """Every ``fns[n](*args[n])`` under one ``jax.jit``; one jit per function if that raises."""
    if not fns:
        return {}
    both = _attempt(jax.jit(lambda a: {n: fns[n](*a[n]) for n in fns}, **_FAST), (args,))
    if both[0]:
        return {n: (True, v) for n, v in both[1].items()}
    return {n: _attempt(jax.jit(fns[n], **_FAST), args[n]) for n in fns}


def _classify(name, jit, ref, ours, tol) -> Outcome:
    if not ref[0]:
        mine = "ours answered" if ours[0] else f"ours raised {type(ours[1]).__name__}"
        return Outcome(name, jit, "oracle_raised", f"jax: {type(ref[1]).__name__}; {mine}")
    if not ours[0]:
        exc = ours[1]
        cls = "refused" if _refusal(exc) else "raised"
        return Outcome(name, jit, cls, f"{type(exc).__name__}: {str(exc)[:300]}")
    why = _close(ours[1], ref[1], tol)
    return Outcome(name, jit, "different" if why else "equal", why)
