"""The one ``argnums`` normaliser shared by every transform (grad, jvp, jacfwd, jacrev, tape.grad).

Two steps, as in ``jax.grad``: ``normalize_argnums`` validates the spec when the transform is built
(an int, or a non-empty tuple/list of distinct ints; never a bool), and ``resolve_argnums`` maps it
onto the call's positional arguments (negative indices count from the end, ``i % n_args``). Serves
claims C3.2/C3.3 (the transforms' conventions).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["normalize_argnums", "resolve_argnums"]


def normalize_argnums(argnums: int | Sequence[int], fn_name: str = "grad") -> tuple[int, ...] | int:
    """Validate ``argnums`` (an int or a non-empty sequence of distinct ints) before any tracing.

    Returns the int unchanged or the sequence as a tuple; ``TypeError`` for any other type (bools
    included), ``ValueError`` for repeated entries.
    """
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        raise TypeError(f"{fn_name}: argnums={argnums!r}; expected an int or a tuple of ints")
    if isinstance(argnums, (tuple, list)):
        if not argnums or any(isinstance(a, bool) or not isinstance(a, int) for a in argnums):
            raise TypeError(f"{fn_name}: argnums={argnums!r}; expected a non-empty tuple of ints")
        if len(set(argnums)) != len(argnums):
            raise ValueError(f"{fn_name}: argnums={argnums!r} has repeated entries")
        return tuple(argnums)
    return argnums


def resolve_argnums(
    argnums: int | tuple[int, ...], n_args: int, fn_name: str = "grad"
) -> tuple[int, ...]:
    """Positions ``a % n_args`` of a normalised ``argnums`` for a call with ``n_args`` arguments.

    ``ValueError`` naming the range ``[-n_args, n_args)`` when an entry falls outside it; entries
    that name the same position (``(0, -2)`` with two arguments) are rejected too.
    """
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    out = []
    for a in nums:
        if not -n_args <= a < n_args:
            raise ValueError(
                f"{fn_name}: argnums={argnums!r} is out of range for a function called with "
                f"{n_args} positional argument(s); expected values in [{-n_args}, {n_args})"
            )
        out.append(a % n_args)
    if len(set(out)) != len(out):
        raise ValueError(f"{fn_name}: argnums={argnums!r} names the same argument twice")
    return tuple(out)
