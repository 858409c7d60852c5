"""The static rule registries: forward primitive name -> derivative rule (claim C3.2).

Backward is decomposed per op. Every primitive that can appear in a traced program (a jaxpr
equation) maps, through one table, to a VJP rule

    rule(ct, *primals, **params) -> tuple of input cotangents (``None`` = zero)

where ``ct`` is the output cotangent (a list of them when the primitive has several results) and
``params`` are the equation's parameters. Rules are written with ordinary differentiable ``jnp`` /
``lax`` ops, so a backward pass is itself a traceable program and can be differentiated again
(claim C3.3). This mirrors Autodidax's ``transpose_rules`` table: adding a primitive means adding
a rule, never a branch in the interpreter.

Forward mode has a second table of the same shape (Autodidax's ``jvp_rules``):

    rule(primals, tangents, **params) -> (primal_out, tangent_out)

``primals`` and ``tangents`` are sequences, one entry per operand; ``tangents[i] is None`` is a
symbolic zero (an operand that is not being differentiated, or an integer one). ``primal_out`` and
``tangent_out`` are one array each, or lists when the primitive has several results;
``tangent_out`` (or an entry of it) may be ``None`` for a zero tangent.

A third table of the same mechanism holds *forward rules* for primitives whose backward needs more
than their primals (Autodidax's residuals):

    forward_rule(*primals, **params) -> (outputs, residuals)

When a primitive has one, ``Graph.forward`` runs it instead of binding the primitive and keeps
``residuals``; the backward sweep then hands them to the VJP rule as the keyword ``residuals``
(``custom_vjp_call``: what the user's ``fwd`` saved; ``jit``/``scan``: the inner program's
forward environment). A VJP rule called on its own gets ``residuals=None`` and recomputes them.

All three tables are instances of one mechanism, :class:`RuleTable`, keyed by the primitive's
``.name`` (the name a jaxpr equation carries). The rule modules register with the primitive
*object* (``@register_vjp(P.sin_p)``, ``@register_jvp(P.sin_p)``), so one search for ``sin_p``
finds both of a primitive's rules; a string is accepted for a primitive with no object to name
(a user's own primitive, or an alias: a name older jax versions gave the same primitive).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from jax.extend.core import Primitive

__all__ = [
    "JVPRule",
    "MissingJVPRule",
    "MissingVJPRule",
    "RuleTable",
    "VJPRule",
    "PrimitiveKey",
    "get_forward",
    "get_jvp",
    "get_vjp",
    "has_forward",
    "has_jvp",
    "has_vjp",
    "primitive_name",
    "register_forward",
    "register_jvp",
    "register_vjp",
    "registered_jvp_primitives",
    "registered_primitives",
    "unregister_jvp",
    "unregister_vjp",
]

VJPRule = Callable[..., tuple]
# A rule a ``register_*`` decorator hands back unchanged.
_Rule = TypeVar("_Rule", bound=Callable[..., Any])
JVPRule = Callable[..., tuple]
# What a rule is registered under: a primitive object (keyed by its ``.name``) or that name.
PrimitiveKey = Primitive | str


def primitive_name(primitive: PrimitiveKey, fn: str = "register") -> str:
    """The table key of ``primitive``: a ``Primitive``'s ``.name``, or a non-empty str itself."""
    if isinstance(primitive, Primitive):
        return primitive.name
    if isinstance(primitive, str) and primitive:
        return primitive
    raise TypeError(
        f"{fn}: primitive_name={primitive!r}; expected a str (a non-empty primitive name) "
        "or a jax Primitive"
    )


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
            f"(registered: {len(VJP_RULES)} primitives; see registered_primitives())."
        )


class MissingJVPRule(NotImplementedError):
    """No forward-mode (JVP) rule is registered for a primitive (claim C3.2, forward mode)."""

    def __init__(self, primitive_name: str):
        self.primitive_name = primitive_name
        super().__init__(
            f"no JVP rule registered for primitive {primitive_name!r}. Register one with\n"
            f"    @jaxparadigm.autodiff.register_jvp({primitive_name!r})\n"
            f"    def _{primitive_name}_jvp(primals, tangents, **params):\n"
            f"        return primal_out, tangent_out  # a None tangent means zero\n"
            f"(registered: {len(JVP_RULES)} primitives; see registered_jvp_primitives())."
        )


class RuleTable:
    """A static table primitive name -> rule; ``kind`` names it in messages ('VJP' or 'JVP')."""

    def __init__(self, kind: str, missing: type[NotImplementedError]):
        self.kind = kind
        self.missing = missing
        self.rules: dict[str, Callable[..., tuple]] = {}

    def __len__(self) -> int:
        return len(self.rules)

    def register(
        self, primitive: PrimitiveKey, *aliases: PrimitiveKey, overwrite: bool = False
    ) -> Callable[[_Rule], _Rule]:
        """Decorator adding a rule under ``primitive``'s name (and the ``aliases``' names).

        Registering a name twice raises ``ValueError`` unless ``overwrite=True``; every name is
        checked before any is written, so a conflicting alias leaves no partial entry.
        """
        fn = f"register_{self.kind.lower()}"
        names = tuple(primitive_name(p, fn) for p in (primitive, *aliases))

        def decorate(rule: _Rule) -> _Rule:
            if not callable(rule):
                raise TypeError(f"{fn}({names[0]!r}): rule={rule!r} is not callable")
            for name in names:
                if name in self.rules and not overwrite and self.rules[name] is not rule:
                    raise ValueError(
                        f"{fn}: a rule for primitive {name!r} already exists; "
                        "pass overwrite=True to replace it"
                    )
            for name in names:
                self.rules[name] = rule
            return rule

        return decorate

    def get(self, primitive: PrimitiveKey) -> Callable[..., tuple]:
        """The rule registered for ``primitive``; the table's ``missing`` error if none."""
        name = primitive_name(primitive, f"get_{self.kind.lower()}")
        try:
            return self.rules[name]
        except KeyError:
            raise self.missing(name) from None

    def has(self, primitive: PrimitiveKey) -> bool:
        return primitive_name(primitive, f"has_{self.kind.lower()}") in self.rules

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.rules))

    def unregister(self, primitive: PrimitiveKey) -> None:
        self.rules.pop(primitive_name(primitive, f"unregister_{self.kind.lower()}"), None)


VJP_RULES = RuleTable("VJP", MissingVJPRule)
JVP_RULES = RuleTable("JVP", MissingJVPRule)


def register_vjp(
    primitive: PrimitiveKey, *aliases: PrimitiveKey, overwrite: bool = False
) -> Callable[[_Rule], _Rule]:
    """Decorator adding ``rule`` to the VJP registry under ``primitive`` (and ``aliases``). C3.2.

    ``rule(ct, *primals, **params)`` returns one cotangent per primal (``None`` for zero).
    Registering a name twice raises ``ValueError`` unless ``overwrite=True``.
    """
    return VJP_RULES.register(primitive, *aliases, overwrite=overwrite)


def get_vjp(primitive: PrimitiveKey) -> VJPRule:
    """The VJP rule registered for ``primitive``; ``MissingVJPRule`` if none. C3.2."""
    return VJP_RULES.get(primitive)


def has_vjp(primitive: PrimitiveKey) -> bool:
    """Whether ``primitive`` has a registered VJP rule. C3.2."""
    return VJP_RULES.has(primitive)


def registered_primitives() -> tuple[str, ...]:
    """Sorted names of every primitive with a VJP rule: the static table of claim C3.2."""
    return VJP_RULES.names()


def unregister_vjp(primitive: PrimitiveKey) -> None:
    """Remove a VJP rule (used by tests that register temporary rules). C3.2."""
    VJP_RULES.unregister(primitive)


def register_jvp(
    primitive: PrimitiveKey, *aliases: PrimitiveKey, overwrite: bool = False
) -> Callable[[_Rule], _Rule]:
    """Decorator adding ``rule`` to the JVP registry under ``primitive`` (and ``aliases``). C3.2.

    ``rule(primals, tangents, **params)`` returns ``(primal_out, tangent_out)``; a ``None``
    tangent (in or out) is a symbolic zero. Registering a name twice raises ``ValueError`` unless
    ``overwrite=True``.
    """
    return JVP_RULES.register(primitive, *aliases, overwrite=overwrite)


def get_jvp(primitive: PrimitiveKey) -> JVPRule:
    """The JVP rule registered for ``primitive``; ``MissingJVPRule`` if none. C3.2."""
    return JVP_RULES.get(primitive)


def has_jvp(primitive: PrimitiveKey) -> bool:
    """Whether ``primitive`` has a registered JVP rule. C3.2."""
    return JVP_RULES.has(primitive)


def registered_jvp_primitives() -> tuple[str, ...]:
    """Sorted names of every primitive with a JVP rule."""
    return JVP_RULES.names()


def unregister_jvp(primitive: PrimitiveKey) -> None:
    """Remove a JVP rule (used by tests that register temporary rules)."""
    JVP_RULES.unregister(primitive)


FORWARD_RULES = RuleTable("forward", NotImplementedError)


def register_forward(
    primitive: PrimitiveKey, *aliases: PrimitiveKey, overwrite: bool = False
) -> Callable[[_Rule], _Rule]:
    """Decorator adding a forward rule ``rule(*primals, **params) -> (outputs, residuals)``. C2.2.

    The graph's forward sweep keeps ``residuals`` and passes them to the primitive's VJP rule as
    ``residuals=`` (saved instead of recomputed in the backward sweep).
    """
    return FORWARD_RULES.register(primitive, *aliases, overwrite=overwrite)


def get_forward(primitive: PrimitiveKey) -> Callable[..., tuple]:
    """The forward rule of ``primitive`` (``NotImplementedError`` if none). C2.2/C3.2."""
    return FORWARD_RULES.get(primitive)


def has_forward(primitive: PrimitiveKey) -> bool:
    """Whether ``primitive`` keeps residuals through a forward rule. C2.2/C3.2."""
    return FORWARD_RULES.has(primitive)
