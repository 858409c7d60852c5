"""The static VJP registry: forward primitive name -> gradient rule (claim C3.2).

Backward is decomposed per op. Every primitive that can appear in a traced program (a jaxpr
equation) maps, through one table, to a rule

    rule(ct, *primals, **params) -> tuple of input cotangents (``None`` = zero)

where ``ct`` is the output cotangent (a list of them when the primitive has several results) and
``params`` are the equation's parameters. Rules are written with ordinary differentiable ``jnp`` /
``lax`` ops, so a backward pass is itself a traceable program and can be differentiated again
(claim C3.3). This mirrors Autodidax's ``transpose_rules`` table: adding a primitive means adding
a rule, never a branch in the interpreter.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "MissingVJPRule",
    "VJPRule",
    "get_vjp",
    "has_vjp",
    "register_vjp",
    "registered_primitives",
]

VJPRule = Callable[..., tuple]

_RULES: dict[str, VJPRule] = {}


class MissingVJPRule(NotImplementedError):
    """No gradient rule is registered for a primitive (claim C3.2).

    The registry is static: a program that uses a primitive without a rule cannot be
    differentiated until someone registers one.
    """

    def __init__(self, primitive_name: str):
        self.primitive_name = primitive_name
        super().__init__(
            f"no VJP rule registered for primitive {primitive_name!r}. Register one with\n"
            f"    @jaxparadigm.autodiff.register_vjp({primitive_name!r})\n"
            f"    def _{primitive_name}_vjp(ct, *primals, **params):\n"
            f"        return (cotangent_for_each_primal, ...)  # None means zero\n"
            f"(registered: {len(_RULES)} primitives; see registered_primitives())."
        )


def register_vjp(primitive_name: str, *aliases: str, overwrite: bool = False):
    """Decorator adding ``rule`` to the registry under ``primitive_name`` (and ``aliases``). C3.2.

    ``rule(ct, *primals, **params)`` returns one cotangent per primal (``None`` for zero).
    Registering a name twice raises ``ValueError`` unless ``overwrite=True``.
    """
    names = (primitive_name, *aliases)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"register_vjp: primitive_name={name!r}; expected a non-empty str")

    def decorate(rule: VJPRule) -> VJPRule:
        if not callable(rule):
            raise TypeError(f"register_vjp({primitive_name!r}): rule={rule!r} is not callable")
        # Check every name before writing any, so a conflicting alias leaves no partial entry.
        for name in names:
            if name in _RULES and not overwrite and _RULES[name] is not rule:
                raise ValueError(
                    f"register_vjp: a rule for primitive {name!r} already exists; "
                    "pass overwrite=True to replace it"
                )
        for name in names:
            _RULES[name] = rule
        return rule

    return decorate


def get_vjp(primitive_name: str) -> VJPRule:
    """The rule registered for ``primitive_name``; ``MissingVJPRule`` if none. C3.2."""
    if not isinstance(primitive_name, str):
        raise TypeError(f"get_vjp: primitive_name={primitive_name!r}; expected a str")
    try:
        return _RULES[primitive_name]
    except KeyError:
        raise MissingVJPRule(primitive_name) from None


def has_vjp(primitive_name: str) -> bool:
    """Whether ``primitive_name`` has a registered rule. C3.2."""
    return primitive_name in _RULES


def registered_primitives() -> tuple[str, ...]:
    """Sorted names of every primitive with a rule: the static table of claim C3.2."""
    return tuple(sorted(_RULES))


def unregister_vjp(primitive_name: str) -> None:
    """Remove a rule (used by tests that register temporary rules). C3.2."""
    _RULES.pop(primitive_name, None)
