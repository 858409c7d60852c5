"""jaxparadigm.autodiff.rules: every primitive's derivative rules, one family per module (C3.2).

Each module holds one family's VJP *and* JVP rules, side by side, registered with the primitive
object (``@register_vjp(P.sin_p)`` next to ``@register_jvp(P.sin_p)``), so a search for
``sin_p`` finds both:

* ``elementwise``: arithmetic and identity ops (add, mul, div, pow, max/min, clamp, select_n,
  convert_element_type, copies, barriers, the complex parts);
* ``elementary``: exp, log, trigonometric, tanh, logistic, erf, roots, powers, abs;
* ``special``: hyperbolic, inverse trigonometric and special functions, atan2, rem;
* ``incomplete``: the regularized incomplete gamma (igamma, igammac) and beta functions;
* ``zero_derivative``: the one list of primitives whose derivative is zero;
* ``structural``: dot_general and shape movement; ``conv``: conv_general_dilated;
* ``fft``: fft/ifft/rfft/irfft (linear: the JVP is the FFT, the VJP jax's transpose);
* ``reduction``, ``reduce_window``, ``cumulative``: full, windowed and running reductions;
* ``indexing``: gather and the scatters; ``sorting``: sort and top_k;
* ``call``: jit, checkpoint, custom_jvp/custom_vjp; ``control_flow``: cond, scan, while,
  callbacks;
* ``linalg``, ``decomposition``: triangular/tridiagonal solves, cholesky, lu,
  custom_linear_solve; eigh, qr, svd; ``eig``: the non-symmetric eigendecomposition.

``tangents.py`` and ``scatter_dims.py`` hold helpers the rules share. This module is the one
place that imports (and so registers) every rule module; ``import jaxparadigm.autodiff``
imports it.
"""

from jaxparadigm.autodiff.rules import (  # noqa: F401  (each import registers its rules)
    call,
    control_flow,
    conv,
    cumulative,
    decomposition,
    eig,
    elementary,
    elementwise,
    fft,
    incomplete,
    indexing,
    linalg,
    reduce_window,
    reduction,
    sorting,
    special,
    structural,
    zero_derivative,
)

__all__: list[str] = []
