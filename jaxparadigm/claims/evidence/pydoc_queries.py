"""Hand-written natural-language queries over ``pydoc_data.topics``, labelled with targets (C1.1).

The queries are phrased the way a user asks, not copied from the topic text. ``targets`` lists the
topics that answer the query: the specific topic first, then topics whose text *contains* that same
section verbatim (``compound`` holds if/while/for/try/with/def/class/async; ``specialnames`` holds
customization, attribute access, container/numeric/callable emulation and context managers;
``execmodel`` holds naming and exceptions; ``else`` is a copy of ``if``). A hit on any target
counts.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LabelledQuery", "PYDOC_QUERIES"]


class LabelledQuery(NamedTuple):
    """A query and the topic names that answer it (first = the specific topic)."""

    text: str
    targets: tuple[str, ...]


_CMP = ("compound",)
_SPECIAL = ("specialnames",)

PYDOC_QUERIES: tuple[LabelledQuery, ...] = tuple(
    LabelledQuery(text, targets)
    for text, targets in [
        ("how do I check a condition and crash with a message during debugging", ("assert",)),
        ("give a variable a value, including unpacking several values at once", ("assignment",)),
        ("write a coroutine with async def and run asynchronous loops", ("async", *_CMP)),
        ("what counts as a valid variable name", ("identifiers", "atom-identifiers")),
        (
            "intercept reading an attribute that does not exist on my object",
            ("attribute-access", *_SPECIAL),
        ),
        ("shorthand operators like += that modify a variable in place", ("augassign",)),
        ("pause a coroutine until an awaitable finishes", ("await",)),
        ("how are multiplication, division and modulo of numbers defined", ("binary",)),
        ("bit manipulation with and, or and xor on integers", ("bitwise",)),
        ("what do the three dots ... mean as a value", ("bltin-ellipsis-object", "types")),
        ("the object returned by functions that return nothing", ("bltin-null-object", "types")),
        ("how do and, or and not evaluate and short-circuit", ("booleans",)),
        ("exit a loop early before it finishes", ("break",)),
        ("make instances of my class callable like a function", ("callable-types", *_SPECIAL)),
        ("passing positional and keyword arguments when invoking a function", ("calls",)),
        ("how to declare a new class with base classes", ("class", *_CMP)),
        ("chained comparisons and how equality between different types works", ("comparisons",)),
        (
            "implementing __enter__ and __exit__ to manage resources",
            ("context-managers", *_SPECIAL),
        ),
        ("skip the rest of this loop iteration and go to the next one", ("continue",)),
        ("when I add an int and a float, what type is the result", ("conversions",)),
        (
            "define how my object is printed and compared with repr and eq",
            ("customization", *_SPECIAL),
        ),
        ("step through my program line by line and set breakpoints", ("debugger",)),
        ("remove a name or delete an item from a list", ("del",)),
        ("write a dictionary literal or a dict comprehension", ("dict",)),
        (
            "run code from a string with exec or eval and how names are resolved",
            ("dynamic-features", "execmodel"),
        ),
        ("how errors propagate up the call stack and get handled", ("exceptions", "execmodel")),
        ("how scopes, blocks and name binding work when a program runs", ("execmodel", "naming")),
        ("syntax for writing numbers with a decimal point or an exponent", ("floating",)),
        ("iterate over the items of a list one by one", ("for", *_CMP)),
        ("pad a number with zeros and show two digits after the decimal point", ("formatstrings",)),
        ("define a function with default parameter values and annotations", ("function", *_CMP)),
        ("change a module-level variable from inside a function", ("global",)),
        ("why do names that start and end with double underscores matter", ("id-classes",)),
        ("which words are reserved and cannot be used as names", ("identifiers",)),
        (
            "run some code only when a condition is true, otherwise run other code",
            ("if", "else", *_CMP),
        ),
        ("how to write complex numbers with j", ("imaginary",)),
        ("load another module and bring names from a package into my file", ("import",)),
        ("test whether an element is contained in a collection", ("in",)),
        ("write integers in hexadecimal, octal or binary notation", ("integers",)),
        ("a small anonymous function written on one line", ("lambda",)),
        ("build a list with square brackets or a list comprehension", ("lists",)),
        ("how are variables looked up in nested functions and closures", ("naming", "execmodel")),
        ("assign to a variable of the enclosing function from an inner function", ("nonlocal",)),
        ("overload + and * for my own vector class", ("numeric-types", *_SPECIAL)),
        ("every value has an identity, a type and a value; what is mutability", ("objects",)),
        ("which operators bind more tightly than others", ("operator-summary",)),
        ("a statement that does nothing, used as a placeholder", ("pass",)),
        ("raise a number to an exponent", ("power",)),
        ("throw an error myself and chain it to the original cause", ("raise",)),
        ("send a value back from a function to its caller", ("return",)),
        (
            "make my class support len, indexing and iteration like a list",
            ("sequence-types", *_SPECIAL),
        ),
        ("move the bits of an integer left or right", ("shifting",)),
        ("take a part of a sequence using start, stop and step", ("slicings",)),
        ("attributes like __dict__, __class__ and __name__ that objects have", ("specialattrs",)),
        ("uppercase a string, split it into words or replace text", ("string-methods",)),
        ("quotes, escape sequences, raw strings and bytes literals", ("strings",)),
        ("get an element out of a list or dict with square brackets", ("subscriptions",)),
        ("which values are considered false in an if condition", ("truth",)),
        ("catch an error and run cleanup code no matter what happens", ("try", *_CMP)),
        (
            "overview of the built-in kinds of objects: numbers, sequences, mappings, callables",
            ("types",),
        ),
        ("methods that dictionaries have, such as get, keys, items and update", ("typesmapping",)),
        (
            "bound methods and the self argument when calling a method on an instance",
            ("typesmethods", "types"),
        ),
        ("module objects and their namespace dictionary", ("typesmodules", "types")),
        (
            "operations shared by lists, tuples and ranges such as concatenation and counting",
            ("typesseq",),
        ),
        ("append, insert, pop and sort a list in place", ("typesseq-mutable", "typesseq")),
        ("negate a number or invert its bits", ("unary",)),
        ("repeat a block of code as long as a condition holds", ("while", *_CMP)),
        ("open a file so that it is closed automatically afterwards", ("with", *_CMP)),
        ("produce a series of values lazily from a generator function", ("yield",)),
        ("what is the code object of a compiled function", ("bltin-code-objects", "types")),
    ]
)
