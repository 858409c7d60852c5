"""Random differentiable programs for the differential autodiff suite (issue 23, claims C3.2/C3.3).

A ``Program`` is plain data -- argument shapes, a dtype, a seed and a tuple of op tuples -- so a
shrunk failure prints as a literal that a regression test can keep. ``build(program)`` turns it
into ``(f, args)``: ``f(*args)`` threads one value ``h`` (starting at ``args[0]``) through the ops.
A binary op's other operand is ``args[1]`` or ``args[2]``, a closed-over constant or a Python
scalar literal, of a shape drawn to broadcast against ``h`` (scalars, ``(n,)`` vs ``(m, n)``,
``(1, n)``, ``(m, 1)``), so ``h`` can grow. Inputs and constants are drawn away from kinks and
poles: magnitudes in ``[0.3, 1.2]`` with random signs, denominators and logs behind ``1 + h*h``,
special functions behind maps into their smooth domains (``program_special_ops``), matrices built
well-conditioned (``program_matrix_ops``).

Coverage -- what the strategies (``programs()``, ``random_program``) draw:

* inputs: one to three arrays of rank 0-2 (all differentiated), dtypes float32, float64 (under
  ``jax.enable_x64``), bfloat16 (elementwise ops only, loose tolerance), complex64 and complex128
  (``COMPLEX_UNARY``/``COMPLEX_BINARY``/``COMPLEX_STRUCTURAL``: holomorphic maps, conj/real/
  imag/abs/angle/complex, linear and polynomial structural ops, control flow);
* elementwise (``UNARY``, ``BINARY``): tanh sin cos exp sigmoid softplus gelu relu leaky-relu abs
  clip neg square cube log log1p sqrt rsqrt reciprocal pow erf atan sinh expm1 stop_gradient
  asin acos cosh tan lgamma digamma erf_inv cbrt bessel_i0e bessel_i1e gammainc gammaincc betainc
  polygamma zeta (jax.scipy's, in x); add sub mul div max min
  atan2 pow, fmod and remainder (``rem``), all with implicit broadcasting;
* ``STRUCTURAL``: reductions (sum with/without keepdims, mean, max, min, prod, logsumexp,
  softmax), reshapes, transpose, expand/broadcast, slices (strided, reversed), gather, scatter
  (add, set, and mul/max/min combiners at distinct indices), dynamic_slice /
  dynamic_update_slice, pad, concatenate, cumsum/cumprod/cummax/cummin/cumlogsumexp, sort,
  FFTs in real-valued compositions (fft/ifft, rfft/irfft; refused while the engine
  refuses complex intermediates),
  top_k, argmax + take_along_axis, dot and einsum, reduce_window sum/max pooling, a 1-D
  convolution, 2-D ``conv_general_dilated`` (NCHW / NHWC, strides, explicit padding, rhs
  dilation, feature_group_count, a kernel that is differentiated too), linear algebra
  (cholesky, eigh, svd, qr, triangular_solve left/right/transposed, tridiagonal_solve, and
  lu + custom_linear_solve through jnp.linalg.solve / inv / slogdet), lax.cond / switch / scan /
  fori_loop / while_loop, custom_jvp, custom_vjp, jax.checkpoint, an inner jax.jit;
* transforms (``program_differential``): grad, jacrev, jacfwd, hessian, hvp, jvp, vjp,
  grad-of-grad, eagerly and under jit, jax.vmap of grad; with options: has_aux (grad, jacrev,
  jacfwd, vjp, jvp), a subset of argnums (an int, a 1-tuple, an unsorted tuple), chunk_size
  (jacrev, jacfwd, hessian).

Not drawn (yet): complex linear algebra, sort/pooling/fft of complex values, integer or pytree
inputs (pytrees: ``programs.py``'s model losses), the incomplete gamma / beta functions in ``a``
/ ``b`` (jax has no second derivative there), eig (complex outputs) and schur (no rules), lu and
custom_linear_solve called directly, non-square qr/svd and full_matrices, 3-D or transposed
(lhs-dilated) convolutions, batch_group_count, scatter/gather with duplicate or traced indices,
multi-operand sort, select_n with more than two cases, reduce_precision, remat policies, vmap
inside a program; transforms grad_and_value, linearize, linear_transpose, vmap of jacobians or
hessians, in_dims other than 0.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from jax import lax

from tests.autodiff.program_matrix_ops import MATRIX_STRUCTURAL
from tests.autodiff.program_special_ops import (
    SPECIAL_BINARY,
    SPECIAL_STRUCTURAL,
    SPECIAL_UNARY,
)

__all__ = ["BINARY", "STRUCTURAL", "UNARY", "Program", "build", "programs", "random_program"]

MAX_SIZE = 16  # elements of h, so Hessians stay small


@dataclasses.dataclass(frozen=True)
class Program:
    """``arg_shapes``: one to three inputs (all differentiated); ``ops``: op tuples (see ``build``)."""

    arg_shapes: tuple
    ops: tuple
    dtype: str = "float32"
    seed: int = 0

    @property
    def forward_only(self) -> bool:
        """jax itself has no reverse mode through ``while_loop``."""
        return any(op[0] == "while" for op in self.ops)


UNARY = {
    "tanh": jnp.tanh,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "exp": jnp.exp,
    "sigmoid": jax.nn.sigmoid,
    "softplus": jax.nn.softplus,
    "gelu": jax.nn.gelu,
    "relu": jax.nn.relu,
    "leaky": lambda h: jnp.where(h > 0, h, 0.1 * h),
    "abs": jnp.abs,
    "clip": lambda h: jnp.clip(h, -0.8, 0.8),
    "neg": lambda h: -h,
    "square": lambda h: h**2,
    "cube": lambda h: h**3,
    "log": lambda h: jnp.log(1.0 + h * h),
    "log1p": lambda h: jnp.log1p(h * h),
    "sqrt": lambda h: jnp.sqrt(h * h + 1.0),
    "rsqrt": lambda h: lax.rsqrt(h * h + 1.0),
    "recip": lambda h: 1.0 / (1.0 + h * h),
    "pow": lambda h: jnp.power(1.0 + h * h, 1.5),
    "erf": jax.scipy.special.erf,
    "atan": jnp.arctan,
    "sinh": jnp.sinh,
    "expm1": jnp.expm1,
    "stop_gradient": lambda h: h + 0.5 * lax.stop_gradient(h),
    **SPECIAL_UNARY,
}
BF16_UNARY = ("tanh", "sin", "neg", "square", "sigmoid", "exp")

BINARY = {
    "add": lambda h, o: h + o,
    "sub": lambda h, o: h - o,
    "rsub": lambda h, o: o - h,
    "mul": lambda h, o: h * o,
    "div": lambda h, o: h / o,
    "rdiv": lambda h, o: o / (1.0 + h * h),
    "max": jnp.maximum,
    "min": jnp.minimum,
    "atan2": jnp.arctan2,
    "pow": lambda h, o: jnp.power(1.0 + h * h, o),
    "scaled": lambda h, o: h - o * 0.5,
    **SPECIAL_BINARY,
}
BF16_BINARY = ("add", "sub", "rsub", "mul", "scaled")
SOURCES = ("const", "scalar", "arg1", "arg2")  # argK: the (K+1)-th input, when drawn


def _pool(h, op, init):
    window = (1,) * (h.ndim - 1) + (2,)
    return lax.reduce_window(h, init, op, window, (1,) * h.ndim, "VALID")


@jax.custom_jvp
def _cj_sin(x):
    return jnp.sin(x)


@_cj_sin.defjvp
def _cj_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), 2.0 * jnp.cos(x) * t  # deliberately not sin': the rule must be used


@jax.custom_vjp
def _cv_tanh(x):
    return jnp.tanh(x)


def _cv_fwd(x):
    return jnp.tanh(x), x


def _cv_bwd(x, g):
    return (3.0 * g * (1.0 - jnp.tanh(x) ** 2),)  # deliberately 3x the true derivative


_cv_tanh.defvjp(_cv_fwd, _cv_bwd)


def _scan(h, c):
    def body(carry, x):
        new = jnp.tanh(carry * c + x)
        return new, new * x

    last, ys = lax.scan(body, jnp.zeros(h.shape[1:], h.dtype), h)
    return ys + last


STRUCTURAL = {
    # name: (minimum rank, function(h, c) where c is a seeded constant scalar in [0.3, 1.2])
    "sum": (1, lambda h, c: jnp.sum(h, axis=-1)),
    "sum_keep": (1, lambda h, c: jnp.sum(h, axis=0, keepdims=True)),
    "sum_all": (0, lambda h, c: jnp.sum(h)),
    "mean_keep": (1, lambda h, c: h - jnp.mean(h, axis=-1, keepdims=True)),
    "max": (1, lambda h, c: jnp.max(h, axis=-1)),
    "prod": (1, lambda h, c: jnp.prod(h, axis=0)),
    "logsumexp": (1, lambda h, c: jax.nn.logsumexp(h, axis=-1, keepdims=True)),
    "softmax": (1, lambda h, c: jax.nn.softmax(h, axis=-1)),
    "flatten": (0, lambda h, c: h.reshape(-1)),
    "column": (1, lambda h, c: h.reshape(-1, 1)),
    "transpose": (2, lambda h, c: h.T),
    "expand": (0, lambda h, c: h[None]),
    "broadcast": (0, lambda h, c: jnp.broadcast_to(h, (2, *h.shape))),
    "slice": (1, lambda h, c: h[..., 1:] if h.shape[-1] > 1 else h),
    "stride": (1, lambda h, c: h[..., ::2]),
    "index": (1, lambda h, c: h[..., 0]),
    "flip": (1, lambda h, c: h[..., ::-1]),
    "gather": (1, lambda h, c: h[..., np.array([0, h.shape[-1] - 1, 0])]),
    "scatter": (1, lambda h, c: h.at[..., 0].add(c * h[..., -1])),
    "set": (1, lambda h, c: h.at[..., -1].set(c)),
    "dynamic_slice": (1, lambda h, c: lax.dynamic_slice_in_dim(h, 0, 1, axis=-1)),
    "pad": (1, lambda h, c: jnp.pad(h, ((0, 0),) * (h.ndim - 1) + ((1, 0),))),
    "concat": (1, lambda h, c: jnp.concatenate([h, c * h], axis=-1)),
    "cumsum": (1, lambda h, c: jnp.cumsum(h, axis=-1)),
    "sort": (1, lambda h, c: jnp.sort(h, axis=-1)),
    "dot": (1, lambda h, c: h @ (c * jnp.linspace(-1.0, 1.0, 2 * h.shape[-1]).reshape(-1, 2))),
    "outer": (1, lambda h, c: jnp.einsum("...i,...j->...ij", h, jnp.sin(h))),
    "pool_sum": (1, lambda h, c: _pool(h, lax.add, 0.0) if h.shape[-1] > 1 else h),
    "pool_max": (1, lambda h, c: _pool(h, lax.max, -jnp.inf) if h.shape[-1] > 1 else h),
    "cumprod": (1, lambda h, c: jnp.cumprod(h, axis=-1)),
    "cummax": (1, lambda h, c: lax.cummax(h, axis=h.ndim - 1)),
    "min": (1, lambda h, c: jnp.min(h, axis=0)),
    "argmax_take": (
        1,
        lambda h, c: jnp.take_along_axis(h, jnp.argmax(h, axis=-1, keepdims=True), axis=-1),
    ),
    "top_k": (1, lambda h, c: lax.top_k(h, min(2, h.shape[-1]))[0]),
    "update_slice": (
        1,
        lambda h, c: lax.dynamic_update_slice_in_dim(
            h, c * h[..., :1], h.shape[-1] - 1, h.ndim - 1
        ),
    ),
    "conv": (
        1,
        lambda h, c: jnp.convolve(h, jnp.array([c, -0.5, 0.25]), mode="same") if h.ndim == 1 else h,
    ),
    "cond": (
        0,
        lambda h, c: lax.cond(
            jnp.sum(h) > 0, lambda v: jnp.sin(v) * c, lambda v: jnp.cos(v) + c, h
        ),
    ),
    "switch": (0, lambda h, c: lax.switch(1, [jnp.sin, lambda v: v * v * c, jnp.tanh], h)),
    "scan": (1, lambda h, c: _scan(h, c)),
    "fori": (0, lambda h, c: lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * c + 0.1, h)),
    "while": (
        0,
        lambda h, c: lax.while_loop(
            lambda s: s[0] < 3, lambda s: (s[0] + 1, jnp.sin(s[1]) * c), (0, h)
        )[1],
    ),
    "custom_jvp": (0, lambda h, c: _cj_sin(h)),
    "custom_vjp": (0, lambda h, c: _cv_tanh(h)),
    "checkpoint": (0, lambda h, c: jax.checkpoint(lambda v: jnp.sin(v) * jnp.tanh(v))(h)),
    "jit": (0, lambda h, c: jax.jit(lambda v: jnp.exp(-v * v) * c)(h)),
    **SPECIAL_STRUCTURAL,
    **MATRIX_STRUCTURAL,
}


# Complex programs (issue 36) draw from these: holomorphic maps without poles or branch cuts
# near the drawn values, the non-holomorphic conj/real/imag/abs/angle, and structural ops that
# are linear or polynomial in h (a complex value is never compared: no sort/max/pooling).
COMPLEX_ONLY_UNARY = {
    "conj": jnp.conj,
    "real": lambda h: jnp.real(h) + 0.0,
    "imag": lambda h: jnp.imag(h) + jnp.real(h),
    "angle": jnp.angle,
    "abs": jnp.abs,
    "parts": lambda h: lax.complex(jnp.real(h) * 0.5, jnp.imag(h) - jnp.real(h) ** 2),
}
COMPLEX_UNARY = (
    "tanh",
    "sin",
    "cos",
    "exp",
    "neg",
    "square",
    "cube",
    "sinh",
    "expm1",
    "stop_gradient",
) + tuple(sorted(COMPLEX_ONLY_UNARY))
COMPLEX_BINARY = ("add", "sub", "rsub", "mul", "div", "scaled")
COMPLEX_STRUCTURAL = (
    "sum", "sum_keep", "sum_all", "mean_keep", "prod", "flatten", "column", "transpose",
    "expand", "broadcast", "slice", "stride", "index", "flip", "gather", "scatter", "set",
    "dynamic_slice", "pad", "concat", "cumsum", "cumprod", "dot", "outer", "update_slice",
    "switch", "fori", "checkpoint", "jit",
)  # fmt: skip


def _away_from_zero(rng, shape, dtype):
    """Magnitudes in [0.3, 1.2]: a random sign, or for complex dtypes a random phase."""
    mag = rng.uniform(0.3, 1.2, size=shape)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return jnp.asarray(mag * np.exp(1j * rng.uniform(-np.pi, np.pi, size=shape)), dtype)
    return jnp.asarray(mag * rng.choice([-1.0, 1.0], size=shape), dtype)


def build(program: Program):
    """``(f, args)``: ``f(*args)`` runs ``program.ops`` on ``h = args[0]``; constants are seeded.

    Op tuples: ``("unary", name)``, ``("binary", name, source, shape)`` with source ``arg1`` or
    ``arg2`` (the second or third input), ``const`` (a closed-over array of ``shape``) or
    ``scalar`` (a Python float), and ``("structural", name)``.
    """
    rng = np.random.default_rng(program.seed)
    dtype = jnp.dtype(program.dtype)
    args = tuple(_away_from_zero(rng, s, dtype) for s in program.arg_shapes)
    consts = []
    for op in program.ops:
        if op[0] == "binary" and op[2] == "const":
            consts.append(_away_from_zero(rng, op[3], dtype))
        elif op[0] == "binary" and op[2] == "scalar":
            consts.append(float(rng.uniform(0.3, 1.2) * rng.choice([-1.0, 1.0])))
        else:
            consts.append(float(rng.uniform(0.3, 1.2)))

    def f(*xs):
        h = xs[0]
        for op, const in zip(program.ops, consts, strict=True):
            if op[0] == "unary":
                h = (COMPLEX_ONLY_UNARY | UNARY)[op[1]](h)
            elif op[0] == "binary":
                h = BINARY[op[1]](h, xs[int(op[2][3:])] if op[2].startswith("arg") else const)
            else:
                h = STRUCTURAL[op[1]][1](h, const)
        return h

    return f, args


def _broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _operand_shapes(shape):
    """Shapes that broadcast against ``shape``: extra leading dims (growing h), size-1 dims,
    trailing dims, scalar, the same shape."""
    if not shape:
        return [(2, 3), (3,), (1,), (), ()]
    return [
        (2, *shape),
        (1, *shape[-1:]),
        (1,) * len(shape),
        (*shape[:-1], 1),
        shape[-1:],
        (),
        shape,
    ]


ARG_SHAPES = [(3,), (2, 3), (1, 3), (3, 1), (), (1,), (4,)]
DTYPES = ("float32", "float32", "float64", "bfloat16", "complex64", "complex128")


def _draw_program(choose, max_ops: int, dtypes) -> Program:
    """One program from ``choose(options) -> option`` (hypothesis' ``sampled_from`` or a numpy
    generator): the op sequence, each op's operand shape, the shapes kept <= ``MAX_SIZE``."""
    dtype = choose(dtypes)
    bf16 = dtype == "bfloat16"
    cplx = dtype.startswith("complex")
    unary = BF16_UNARY if bf16 else (COMPLEX_UNARY if cplx else sorted(UNARY))
    binary = BF16_BINARY if bf16 else (COMPLEX_BINARY if cplx else sorted(BINARY))
    structural = COMPLEX_STRUCTURAL if cplx else sorted(STRUCTURAL)
    shape0 = choose(ARG_SHAPES)
    arg_shapes = [shape0]
    for _ in range(choose((0, 1, 1, 2))):  # a second input half the time, a third a quarter
        arg_shapes.append(choose(_operand_shapes(shape0)))
    shape, ops = shape0, []
    kinds = ("binary", "unary", "binary") if bf16 else ("binary", "structural", "unary")
    for _ in range(choose(range(1, (3 if bf16 else max_ops) + 1))):
        kind = choose(kinds)
        if kind == "unary":
            ops.append(("unary", choose(unary)))
        elif kind == "binary":
            name = choose(binary)
            source = choose(SOURCES[: 1 + len(arg_shapes)])
            o_shape = arg_shapes[int(source[3:])] if source.startswith("arg") else None
            o_shape = () if source == "scalar" else o_shape
            if o_shape is None:
                o_shape = choose(_operand_shapes(shape))
            new = _broadcast(shape, o_shape)
            if new is None or int(np.prod(new)) > MAX_SIZE:
                continue
            ops.append(("binary", name, source, o_shape))
            shape = new
        else:
            name = choose(structural)
            if len(shape) < STRUCTURAL[name][0]:
                continue
            new = tuple(
                jax.eval_shape(
                    lambda h, n=name: STRUCTURAL[n][1](h, 0.5),
                    jax.ShapeDtypeStruct(shape, jnp.float32),
                ).shape
            )
            if int(np.prod(new)) > MAX_SIZE or len(new) > 3:
                continue
            ops.append(("structural", name))
            shape = new
    if not ops:
        ops.append(("unary", "tanh"))
    return Program(tuple(arg_shapes), tuple(ops), dtype, int(choose(range(2**16))))


@st.composite
def programs(draw, max_ops: int = 6, dtypes=DTYPES):
    """Hypothesis strategy: a ``Program`` of 1..max_ops ops (shrinks toward short programs and
    the first entry of every table: float32, shape (3,), growing operand shapes, ...)."""
    return _draw_program(lambda options: draw(st.sampled_from(list(options))), max_ops, dtypes)


def random_program(seed: int, max_ops: int = 6, dtypes=DTYPES) -> Program:
    """The same program space drawn uniformly by ``numpy.random.default_rng(seed)`` (the
    benchmark and the CI sample: hypothesis' own draws favour the simplest programs)."""
    rng = np.random.default_rng(seed)
    return _draw_program(lambda options: list(options)[rng.integers(len(options))], max_ops, dtypes)
