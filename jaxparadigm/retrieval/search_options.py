"""The options of one search of an index, the same through every door (C1.1, C5.2).

:class:`SearchOptions` is the one description of a search: ``jaxparadigm search --index`` builds
one from its flags, the library takes one (``search_with_excerpts(..., options=...)``,
``IndexSearcher(..., options=...)``), ``serve`` builds its defaults from its flags and each
``POST /search`` body from the keys it sends (the body keys are the field names), the search
page sends ``mode``, and a search split over processes refuses, through
:meth:`SearchOptions.check_process_group`, what it cannot do. Its fields and their bounds are
written once, as type hints (:mod:`jaxparadigm.fields`); the defaults are those of the CLI::

    mode            "hybrid"    "hybrid": BM25 and dense ranks fused, score(row) = sum over the two
                                rankings of 1 / (60 + rank); "dense": score = cos(query, passage)
    k               5           how many hits (top-k), an int >= 1
    nprobe          "default"   inverted lists the dense ranking scans: an int (an index with IVF
                                lists, at most its lists); "default": the index's default
                                (``default_nprobe`` of its lists; exact when it has none, with
                                ``approx``, or when split over processes); None: exact
    depth           100         how many of each ranking hybrid fuses
    approx          False       ``lax.approx_max_k`` picks the dense candidates (mode "dense")
    excerpts        True        each hit carries its best excerpt (``best_excerpt``)
    excerpt_chars   240         the longest excerpt, in characters
    dtype           "float32"   the search copy of the embeddings (bfloat16/int8: less memory, the
                                best candidates rescored in float32)
    stream          False       read the shards per search instead of holding them (low memory)

``dtype`` and ``stream`` are how an index is opened (:data:`OPENING_FIELDS`); the others apply to
each search. A bad field is one error naming ``search.<field>``, the value and what was expected
(``TypeError`` for a wrong type, ``ValueError`` for a value outside its bounds); a door reads its
values with :meth:`SearchOptions.read`, which refuses an unknown key (listing the fields) and
names a bad one as the door spells it (``--top-k``, a body key ``k``) in one
:class:`~jaxparadigm.errors.InputError`.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from jaxparadigm.errors import InputError, short_repr
from jaxparadigm.fields import Bounds, check_fields

__all__ = [
    "MODES",
    "OPENING_FIELDS",
    "SEARCH_DTYPES",
    "SearchDtype",
    "SearchMode",
    "SearchOptions",
]

#: How the hits are ranked (the CLI's default first).
SearchMode = Literal["hybrid", "dense"]
#: The search modes, the default first.
MODES: tuple[str, ...] = typing.get_args(SearchMode)
#: The search copy of an index's embeddings.
SearchDtype = Literal["float32", "bfloat16", "int8"]
#: The search dtypes, the default first.
SEARCH_DTYPES: tuple[str, ...] = typing.get_args(SearchDtype)
#: The fields that say how an index is opened (the rest apply to each search).
OPENING_FIELDS = ("dtype", "stream")

_AtLeastOne = Annotated[int, Bounds(ge=1)]


@dataclass(frozen=True)
class SearchOptions:
    """One search's options (module docstring: the fields, their defaults and meaning)."""

    PATH: ClassVar[str] = "search"

    mode: SearchMode = "hybrid"
    k: _AtLeastOne = 5
    nprobe: _AtLeastOne | Literal["default"] | None = "default"
    depth: _AtLeastOne = 100
    approx: bool = False
    excerpts: bool = True
    excerpt_chars: _AtLeastOne = 240
    dtype: SearchDtype = "float32"
    stream: bool = False

    def __post_init__(self) -> None:
        check_fields(self)
        problem = self._combination_problem(_spelling(None))
        if problem is not None:
            raise ValueError(problem)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The field names, in order: what a door may set (a ``POST /search`` body's keys)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def _combination_problem(self, name: Callable[[str], str]) -> str | None:
        """A pair of fields that cannot go together, in words, or None."""
        if self.approx and self.mode != "dense":
            return (
                f"{name('approx')}=True: approximates the dense ranking alone, but "
                f"{name('mode')}={self.mode!r}; expected {name('mode')}='dense'"
            )
        if self.approx and isinstance(self.nprobe, int):
            return (
                f"{name('approx')}=True: given with {name('nprobe')}={self.nprobe} (both "
                f"approximate the dense ranking); expected one of them"
            )
        return None

    @classmethod
    def read(
        cls,
        values: Mapping[str, object],
        *,
        base: SearchOptions | None = None,
        spelled: Mapping[str, str] | None = None,
        what: str = "search option",
    ) -> SearchOptions:
        """``base`` (default: ``SearchOptions()``) with the fields ``values`` sets, as a door reads
        them: an unknown key, or a bad value, is one :class:`InputError` naming the key as the door
        spells it (``spelled``: field -> the door's name, e.g. ``{"k": "--top-k"}``; a field it
        does not name is ``search.<field>``), the value and what was expected."""
        name = _spelling(spelled)
        unknown = sorted(str(key) for key in set(values) - set(cls.keys()))
        if unknown:
            raise InputError(
                f"{what} {short_repr(unknown[0])}: unknown; expected one of "
                + ", ".join(name(f) for f in cls.keys())
            )
        try:
            return dataclasses.replace(base or cls(), **values)  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise InputError(_respell(str(exc), name)) from None

    @classmethod
    def from_keywords(
        cls,
        options: SearchOptions | None,
        keywords: Mapping[str, object],
        defaults: Mapping[str, object],
        base: SearchOptions | None = None,
    ) -> SearchOptions:
        """What a library function that takes ``options=`` or its older keywords searches with:
        ``options`` as given (every keyword left None), or ``base`` with ``keywords`` (a None
        keyword takes its value in ``defaults``, or else the base's) read as :meth:`read` reads
        them, the same checks. A keyword given together with ``options`` is refused."""
        given = [name for name, value in keywords.items() if value is not None]
        if options is None:
            values = {
                n: defaults[n] if v is None else v for n, v in keywords.items() if n in defaults
            }
            values |= {n: v for n, v in keywords.items() if v is not None}
            return cls.read(values, base=base)
        if not isinstance(options, SearchOptions):
            raise TypeError(f"options: got {type(options).__name__}, expected a SearchOptions")
        if given:
            raise InputError(
                f"{given[0]}: given with options; expected one of them (options.{given[0]})"
            )
        return options

    def opening(self) -> SearchOptions:
        """Only the fields of :data:`OPENING_FIELDS` taken from these options (the rest default)."""
        return SearchOptions(**{f: getattr(self, f) for f in OPENING_FIELDS})

    def check_opening(
        self, opened: SearchOptions, where: str, spelled: Mapping[str, str] | None = None
    ) -> None:
        """Refuse these options when a field of :data:`OPENING_FIELDS` differs from ``opened``'s
        (how ``where``, an opened index, was opened): one :class:`InputError` naming the field."""
        name = _spelling(spelled)
        for f in OPENING_FIELDS:
            got, want = getattr(self, f), getattr(opened, f)
            if got != want:
                raise InputError(
                    f"{name(f)}={got!r}: {where} was opened with {f} {want!r} (it applies to "
                    f"the whole index, not to one search); expected {want!r}"
                )

    def check_process_group(self, processes: int, spelled: Mapping[str, str] | None = None) -> None:
        """Refuse what a search split over ``processes`` processes (each holding its own shards)
        cannot do, naming the first such field as the door spells it (:class:`InputError`):
        hybrid mode (its BM25 ranking needs every passage), an int ``nprobe`` (the IVF lists span
        every process's rows) and ``approx`` (the processes' top-k lists are merged exactly)."""
        name = _spelling(spelled)
        split = f"a search split over {processes} processes"
        if self.mode != "dense":
            raise InputError(
                f"{name('mode')}={self.mode!r}: the BM25 ranking of hybrid needs every passage, "
                f"but in {split} each holds only its own shards; expected {name('mode')}='dense'"
            )
        if isinstance(self.nprobe, int):
            raise InputError(
                f"{name('nprobe')}={self.nprobe}: the IVF lists span every process's rows, and "
                f"{split} searches exactly; expected {name('nprobe')} left out (the default)"
            )
        if self.approx:
            raise InputError(
                f"{name('approx')}=True: {split} merges the processes' exact top-k lists; "
                f"expected {name('approx')} off"
            )

    @classmethod
    def for_process_group(
        cls,
        values: Mapping[str, object],
        processes: int,
        *,
        spelled: Mapping[str, str] | None = None,
        what: str = "search option",
    ) -> SearchOptions:
        """The options of a search split over ``processes`` processes: ``values`` over the group's
        defaults (``SearchOptions()`` with mode "dense", the one mode it can rank by), checked by
        :meth:`check_process_group`."""
        options = cls.read(values, base=cls(mode="dense"), spelled=spelled, what=what)
        options.check_process_group(processes, spelled)
        return options


def _spelling(spelled: Mapping[str, str] | None) -> Callable[[str], str]:
    """field -> how the door spells it (``search.<field>`` when ``spelled`` does not say)."""
    table = dict(spelled or {})
    return lambda field: table.get(field, f"{SearchOptions.PATH}.{field}")


_FIELD_KEY = re.compile(
    rf"(?<![\w.-]){SearchOptions.PATH}\.({'|'.join(SearchOptions.keys())})(?==|: got )"
)


def _respell(message: str, name: Callable[[str], str]) -> str:
    """``message`` with each ``search.<field>`` (before ``=`` or ``: got``) written as the door
    spells the field."""
    return _FIELD_KEY.sub(lambda m: name(m.group(1)), message)
