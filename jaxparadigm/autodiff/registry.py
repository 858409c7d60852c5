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

All three tables are instances of one mechanism, :class:`RuleTable`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "JVPRule",
    "MissingJVPRule",
    "MissingVJPRule",
    "RuleTable",
    "VJPRule",
    "get_forward",
    "get_jvp",
    "get_vjp",
    "has_forward",
    "has_jvp",
    "has_vjp",
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
        self, primitive_name: str, *aliases: str, overwrite: bool = False
    ) -> Callable[[_Rule], _Rule]:
        """Decorator adding a rule under ``primitive_name`` (and ``aliases``).

        Registering a name twice raises ``ValueError`` unless ``overwrite=True``; every name is
        checked before any is written, so a conflicting alias leaves no partial entry.
        """
        fn = f"register_{self.kind.lower()}"
        names = (primitive_name, *aliases)
        for name in names:
            if not isinstance(name, str) or not name:
                raise TypeError(f"{fn}: primitive_name={name!r}; expected a non-empty str")

        def decorate(rule: _Rule) -> _Rule:
            if not callable(rule):
                raise TypeError(f"{fn}({primitive_name!r}): rule={rule!r} is not callable")
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

    def get(self, primitive_name: str) -> Callable[..., tuple]:
        """The rule registered for ``primitive_name``; the table's ``missing`` error if none."""
        if not isinstance(primitive_name, str):
            raise TypeError(
                f"get_{self.kind.lower()}: primitive_name={primitive_name!r}; expected a str"
            )
        try:
            return self.rules[primitive_name]
        except KeyError:
            raise self.missing(primitive_name) from None

    def has(self, primitive_name: str) -> bool:
        return primitive_name in self.rules

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.rules))

    def unregister(self, primitive_name: str) -> None:
        self.rules.pop(primitive_name, None)


VJP_RULES = RuleTable("VJP", MissingVJPRule)
JVP_RULES = RuleTable("JVP", MissingJVPRule)


def register_vjp(
    primitive_name: str, *aliases: str, overwrite: bool = False
) -> Callable[[_Rule], _Rule]:
    """Decorator adding ``rule`` to the VJP registry under ``primitive_name`` (and ``aliases``). C3.2.

    ``rule(ct, *primals, **params)`` returns one cotangent per primal (``None`` for zero).
    Registering a name twice raises ``ValueError`` unless ``overwrite=True``.
    """
    return VJP_RULES.register(primitive_name, *aliases, overwrite=overwrite)


def get_vjp(primitive_name: str) -> VJPRule:
    """The VJP rule registered for ``primitive_name``; ``MissingVJPRule`` if none. C3.2."""
    return VJP_RULES.get(primitive_name)


def has_vjp(primitive_name: str) -> bool:
    """Whether ``primitive_name`` has a registered VJP rule. C3.2."""
    return VJP_RULES.has(primitive_name)


def registered_primitives() -> tuple[str, ...]:
    """Sorted names of every primitive with a VJP rule: the static table of claim C3.2."""
    return VJP_RULES.names()


def unregister_vjp(primitive_name: str) -> None:
    """Remove a VJP rule (used by tests that register temporary rules). C3.2."""
    VJP_RULES.unregister(primitive_name)


def register_jvp(
    primitive_name: str, *aliases: str, overwrite: bool = False
) -> Callable[[_Rule], _Rule]:
    """Decorator adding ``rule`` to the JVP registry under ``primitive_name`` (and ``aliases``). C3.2.

    ``rule(primals, tangents, **params)`` returns ``(primal_out, tangent_out)``; a ``None``
    tangent (in or out) is a symbolic zero. Registering a name twice raises ``ValueError`` unless
    ``overwrite=True``.
    """
    return JVP_RULES.register(primitive_name, *aliases, overwrite=overwrite)


def get_jvp(primitive_name: str) -> JVPRule:
    """The JVP rule registered for ``primitive_name``; ``MissingJVPRule`` if none. C3.2."""
    return JVP_RULES.get(primitive_name)


def has_jvp(primitive_name: str) -> bool:
    """Whether ``primitive_name`` has a registered JVP rule. C3.2."""
    return JVP_RULES.has(primitive_name)


def registered_jvp_primitives() -> tuple[str, ...]:
    """Sorted names of every primitive with a JVP rule."""
    return JVP_RULES.names()


def unregister_jvp(primitive_name: str) -> None:
    """Remove a JVP rule (used by tests that register temporary rules)."""
    JVP_RULES.unregister(primitive_name)


FORWARD_RULES = RuleTable("forward", NotImplementedError)


def register_forward(
    primitive_name: str, *aliases: str, overwrite: bool = False
) -> Callable[[_Rule], _Rule]:
    """Decorator adding a forward rule ``rule(*primals, **params) -> (outputs, residuals)``. C2.2.

    The graph's forward sweep keeps ``residuals`` and passes them to the primitive's VJP rule as
    ``residuals=`` (saved instead of recomputed in the backward sweep).
    """
    return FORWARD_RULES.register(primitive_name, *aliases, overwrite=overwrite)


def get_forward(primitive_name: str) -> Callable[..., tuple]:
    """The forward rule of ``primitive_name`` (``NotImplementedError`` if none). C2.2/C3.2."""
    return FORWARD_RULES.get(primitive_name)


def has_forward(primitive_name: str) -> bool:
    """Whether ``primitive_name`` keeps residuals through a forward rule. C2.2/C3.2."""
    return FORWARD_RULES.has(primitive_name)
