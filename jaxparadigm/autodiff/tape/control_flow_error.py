"""The one error for Python control flow on a traced value (C3.1).

Outside ``jit`` our transforms fall back to define-by-run (``tape.define_by_run``) when tracing
``f`` fails because ``f`` branches on, or converts, the value of a differentiated argument. When
the arguments themselves are abstract (under ``jax.jit``, ``jax.vmap``, or a traced transform of
ours) no value exists to branch on, and ``ValueControlFlowError`` says so once, naming the
user's function (its file and first line) and the line that branched, and suggests the
traceable spellings ``jnp.where`` / ``lax.cond``.

It subclasses jax's ``ConcretizationTypeError`` so an outer transform of ours, tracing this one,
sees the same kind of failure and falls back to define-by-run in its turn.
"""

from __future__ import annotations

import inspect
import linecache
import os
import types

import jax

__all__ = ["CONCRETIZATION_ERRORS", "ValueControlFlowError", "describe_function", "user_line"]

# The failures that mean "the function needs the value of a traced argument".
CONCRETIZATION_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
)

_INTERNAL = (
    os.sep + "jax" + os.sep,
    os.sep + "jaxlib" + os.sep,
    os.sep + "jaxparadigm" + os.sep + "autodiff" + os.sep,
    os.sep + "contextlib.py",
    os.sep + "functools.py",
)


class ValueControlFlowError(jax.errors.ConcretizationTypeError):
    """``f`` uses the value of a traced argument (``if x > 0``, ``int(x)``) under a tracing
    transform, where no value exists. ``TypeError`` subclass, like jax's own."""

    def __init__(self, message: str):
        TypeError.__init__(self, message)

    def __str__(self) -> str:
        return str(self.args[0])


def describe_function(fn) -> str:
    """```name` (file:line)`` for a Python function (through ``functools.wraps``/``partial``)."""
    target = inspect.unwrap(fn)
    while hasattr(target, "func") and not hasattr(target, "__code__"):
        target = target.func  # functools.partial
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    code = getattr(target, "__code__", None)
    if code is None:
        return f"`{name}`"
    return f"`{name}` ({code.co_filename}:{code.co_firstlineno})"


def user_line(tb: types.TracebackType | None) -> str | None:
    """``file:line: source`` of the innermost traceback frame outside jax and our engine."""
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not any(part in filename for part in _INTERNAL):
            source = linecache.getline(filename, tb.tb_lineno).strip()
            found = f"{filename}:{tb.tb_lineno}: {source}"
        tb = tb.tb_next
    return found


def value_control_flow_error(fn_name: str, fn, err: BaseException) -> ValueControlFlowError:
    """The error for ``fn`` (differentiated by ``fn_name``) whose tracing failed with ``err``."""
    where = user_line(err.__traceback__)
    at = f" at {where}" if where else ""
    return ValueControlFlowError(
        f"{fn_name}: the function {describe_function(fn)} uses the value of a traced argument "
        f"(Python control flow or a conversion such as `if x > 0`, `bool(x)`, `int(x)`){at}, "
        f"but its arguments are abstract here (under jax.jit, jax.vmap or another tracing "
        "transform), so there is no value to branch on. Outside jit the function is "
        "differentiated define-by-run on the concrete values; under jit write the branch with "
        "jnp.where(cond, a, b) or lax.cond(cond, true_fn, false_fn, *operands) (loops: "
        f"lax.fori_loop / lax.while_loop). ({type(err).__name__}: {str(err).splitlines()[0]})"
    )
