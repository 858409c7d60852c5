"""The static rule registries: forward primitive name -> derivative rule (claim C3.2).

Backward is decomposed per op. Every primitive that can appear in a traced program (a jaxpr
equation) maps, through one table, to a VJP rule::

    rule(ct, *primals, **params) -> tuple of input cotangents (``None`` = zero)

where ``ct`` is the output cotangent (a list of them when the primitive has several results) and
``params`` are the equation's parameters. Rules are written with ordinary differentiable ``jnp`` /
``lax`` ops, so a backward pass is itself a traceable program and can be differentiated again
(claim C3.3). This mirrors Autodidax's ``transpose_rules`` table: adding a primitive means adding
a rule, never a branch in the interpreter.

Forward mode has a second table of the same shape (Autodidax's ``jvp_rules``)::

    rule(primals, tangents, **params) -> (primal_out, tangent_out)

``primals`` and ``tangents`` are sequences, one entry per operand; ``tangents[i] is None`` is a
symbolic zero (an operand that is not being differentiated, or an integer one). ``primal_out`` and
``tangent_out`` are one array each, or lists when the primitive has several results;
``tangent_out`` (or an entry of it) may be ``None`` for a zero tangent.

A third table of the same mechanism holds *forward rules* for primitives whose backward needs more
than their primals (Autodidax's residuals)::

    forward_rule(*primals, **params) -> (outputs, residuals)

When a primitive has one, ``Graph.forward`` runs it instead of binding the primitive and keeps
``residuals``; the backward sweep then hands them to the VJP rule as the keyword ``residuals``
(``custom_vjp_call``: what the user's ``fwd`` saved; ``jit``/``scan``: the inner program's
forward environment). A VJP rule called on its own gets ``residuals=None`` and recomputes them.

A primitive with no derivative in one operand (polygamma's order ``m``, betainc's ``a`` and ``b``:
jax refuses them) says so with :class:`NoDerivative`: its VJP rule returns ``NoDerivative("m")``
for that operand, and its JVP rule is built with the same marker. Either sweep raises
:class:`NotDifferentiable` (one ``ValueError`` naming the primitive and the operand) when the
operand is differentiated, and treats it as a constant otherwise -- never a silent zero.

All three tables are instances of one mechanism, :class:`RuleTable`, keyed by the primitive's
``.name`` (the name a jaxpr equation carries). The rule modules register with the primitive
*object* (``@register_vjp(P.sin_p)``, ``@register_jvp(P.sin_p)``), so one search for ``sin_p``
finds both of a primitive's rules; a string is accepted for a primitive with no object to name
(a user's own primitive, or an alias: a name older jax versions gave the same primitive).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from jax.extend.core import Primitive

__all__ = [
    "JVPRule",
    "MissingJVPRule",
    "MissingVJPRule",
    "NoDerivative",
    "NotDifferentiable",
    "RuleTable",
    "apply_vjp",
    "VJPRule",
    "PrimitiveKey",
    "get_forward",
    "get_jvp",
    "get_vjp",
    "has_forward",
    "has_jvp",
    "has_vjp",
    "has_zero_derivative",
    "primitive_name",
    "refuse_no_derivative",
    "register_forward",
    "register_jvp",
    "register_vjp",
    "register_zero_derivative",
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


@dataclasses.dataclass(frozen=True)
class NoDerivative:
    """A rule's answer for an operand its primitive has no derivative in (``operand``: its name).

    A VJP rule returns it in that operand's place; ``tangents.partials_rule`` takes it in that
    operand's partial. The sweeps turn it into :class:`NotDifferentiable` when the operand is
    differentiated (``refuse_no_derivative``), and into a zero cotangent when it is a constant.
    """

    operand: str


class NotDifferentiable(ValueError):
    """A program differentiates a primitive in an operand it has no derivative in (claim C3.2)."""

    def __init__(self, mode: str, primitive_name: str, operand: str, position: int):
        self.primitive_name, self.operand, self.position = primitive_name, operand, position
        super().__init__(
            f"{mode}: primitive {primitive_name!r} is not differentiable with respect to its "
            f"argument {operand!r} (operand {position}; jax refuses it too); pass {operand} as a "
            "constant or through jax.lax.stop_gradient"
        )


def refuse_no_derivative(
    mode: str, primitive_name: str, in_cts: Sequence, differentiated: Sequence[bool]
) -> list:
    """``in_cts`` with each ``NoDerivative`` marker replaced by ``None`` (a zero cotangent).

    Raises ``NotDifferentiable`` for the first marker whose operand is ``differentiated``.
    """
    out = list(in_cts)
    for i, (c, d) in enumerate(zip(out, differentiated, strict=True)):
        if isinstance(c, NoDerivative):
            if d:
                raise NotDifferentiable(mode, primitive_name, c.operand, i)
            out[i] = None
    return out


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


# Primitives whose derivative is zero everywhere (``rules.zero_derivative``): the activity
# analysis of either reverse sweep stops at their outputs, as jax's symbolic zeros do.
_ZERO_DERIVATIVE: set[str] = set()


def register_zero_derivative(primitive: PrimitiveKey) -> None:
    """Mark ``primitive``'s outputs as never differentiated (sign, floor, stop_gradient). C3.2."""
    _ZERO_DERIVATIVE.add(primitive_name(primitive, "register_zero_derivative"))


def has_zero_derivative(primitive: PrimitiveKey) -> bool:
    """Whether ``primitive``'s derivative is zero everywhere (its outputs are constants). C3.2."""
    return primitive_name(primitive, "has_zero_derivative") in _ZERO_DERIVATIVE


# Primitives whose VJP rule takes ``active=`` (it runs an inner sweep: jit, remat, scan, cond).
_TAKES_ACTIVE: set[str] = set()


def register_vjp(
    primitive: PrimitiveKey,
    *aliases: PrimitiveKey,
    overwrite: bool = False,
    takes_active: bool = False,
) -> Callable[[_Rule], _Rule]:
    """Decorator adding ``rule`` to the VJP registry under ``primitive`` (and ``aliases``). C3.2.

    ``rule(ct, *primals, **params)`` returns one cotangent per primal (``None`` for zero, a
    ``NoDerivative`` where the primitive has no derivative). With ``takes_active=True`` the
    sweeps also pass ``active=`` (one bool per primal: is it differentiated), for a rule whose
    inner sweep must differentiate only those operands. Registering a name twice raises
    ``ValueError`` unless ``overwrite=True``.
    """
    names = {primitive_name(p, "register_vjp") for p in (primitive, *aliases)}
    register = VJP_RULES.register(primitive, *aliases, overwrite=overwrite)

    def decorate(rule: _Rule) -> _Rule:
        register(rule)
        (_TAKES_ACTIVE.update if takes_active else _TAKES_ACTIVE.difference_update)(names)
        return rule

    return decorate


def apply_vjp(
    mode: str,
    primitive: PrimitiveKey,
    ct: Any,
    primals: Sequence,
    active: Sequence[bool],
    /,
    **kw: Any,
) -> list:
    """The input cotangents of one application of ``primitive``: its VJP rule, checked. C3.2.

    ``active[i]``: whether primal ``i`` is differentiated (passed on as ``active=`` to a rule
    registered with ``takes_active``); ``kw``: the equation's parameters (and ``residuals``).
    A rule's ``NoDerivative`` becomes ``NotDifferentiable`` for an active operand, else ``None``.
    """
    name = primitive_name(primitive, "apply_vjp")
    if name in _TAKES_ACTIVE:
        kw["active"] = tuple(active)
    in_cts = get_vjp(name)(ct, *primals, **kw)
    if len(in_cts) != len(primals):
        raise TypeError(
            f"VJP rule for {name!r} returned {len(in_cts)} cotangents for {len(primals)} primals"
        )
    return refuse_no_derivative(mode, name, in_cts, active)


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
    _TAKES_ACTIVE.discard(primitive_name(primitive, "unregister_vjp"))


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
