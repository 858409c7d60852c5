"""Where a passage sits in its document: file name, section headings, enclosing class/def (C1.1).

A document's *outline* is a list of :class:`Section` s, each ``[start, end)`` of the document's
characters with a ``level`` (smaller is outer) and a ``title``, read from the file's own text::

    html (.html .htm)       <title> (level 0, the whole file) and <h1>..<h6> (levels 1-6)
    markup (.md .rst)       ``#``..``######`` lines outside ``` / ~~~ fences (levels 1-6), and
                            setext headings: a line underlined by ``===`` (1), ``---`` (2) or a
                            run of another punctuation mark (3), at least 3 long
    text (.txt, no suffix)  setext headings as above, and a title line: a line of at most
                            60 characters, unindented, between blank lines, not ending in
                            ``. , ; :`` (level 7)
    python (.py)            every ``class`` and ``def`` (its decorators included) to its last
                            line, nested by depth (:mod:`ast`; none when the file does not parse)

A heading's section runs from its first character to the next heading of the same or an outer
level (or the end). The *context* of a passage starting at character ``p`` is

    file name > title of every section holding p, outermost first
                (``core.py > class Option > def __init__``,
                 ``quick-start.html > The Valgrind Quick Start Guide > 2. Preparing your program``)

each title with its whitespace collapsed, Markdown emphasis (``* _ ```) stripped from its ends and
cut to :data:`TITLE_CHARS`, a title equal to the one before it left out; while the context is
longer than :data:`CONTEXT_CHARS` the outermost title after the file name is dropped, and what
is still longer is cut. The context is never part of a passage's text or offsets: the index
stores it beside the passage and the keyword ranking reads ``context + "\\n" + text``
(:func:`with_context`; :mod:`~jaxparadigm.retrieval.ranking.hybrid_search`).
"""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser
from pathlib import PurePath
from typing import NamedTuple

from jaxparadigm.retrieval.documents.readable_text import ABRUPT_COMMENT, blank

__all__ = ["Section", "CONTEXT_CHARS", "TITLE_CHARS", "outline", "context_at", "with_context"]

#: The longest context (characters) and the longest title in it.
CONTEXT_CHARS = 160
TITLE_CHARS = 80
#: The level of a plain-text title line (inside every setext section).
TITLE_LINE_LEVEL = 7


class Section(NamedTuple):
    """``[start, end)`` of the document, its ``level`` (smaller is outer) and ``title``."""

    start: int
    end: int
    level: int
    title: str


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _close(heads: list[tuple[int, int, str]], length: int) -> list[Section]:
    """Sections from ``(start, level, title)`` headings: each ends at the next heading of the
    same or an outer level, or at ``length``."""
    out = []
    for i, (start, level, title) in enumerate(heads):
        end = next((s for s, lv, _ in heads[i + 1 :] if lv <= level), length)
        out.append(Section(start, end, level, title))
    return out


class _Headings(HTMLParser):
    """The ``<title>`` and ``<h1>``..``<h6>`` elements: their start offsets and text."""

    LEVELS = {"title": 0, **{f"h{i}": i for i in range(1, 7)}}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.found: list[tuple[int, int, str]] = []
        self.open: tuple[str, int, list[str]] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in self.LEVELS and self.open is None:
            line, col = self.getpos()
            self.open = (tag, self.line_starts[line - 1] + col, [])

    def handle_endtag(self, tag):
        if self.open is not None and tag == self.open[0]:
            name, at, parts = self.open
            if title := _collapse("".join(parts)):
                self.found.append((at, self.LEVELS[name], title))
            self.open = None

    def handle_data(self, data):
        if self.open is not None:
            self.open[2].append(data)


def _html(text: str) -> list[Section]:
    text = ABRUPT_COMMENT.sub(lambda m: blank(m.group()), text)  # same length, as html_readable
    parser = _Headings(text)
    parser.feed(text)
    parser.close()
    heads = sorted(parser.found)
    return [
        Section(0, len(text), 0, t) if lv == 0 else sec
        for (s, lv, t), sec in zip(heads, _close(heads, len(text)), strict=True)
    ]


_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_UNDERLINE = re.compile(r"([=\-~^*+#\"'`.:_])\1{2,}[ \t]*")


def _lines(text: str) -> list[tuple[int, str]]:
    """``(start offset, line without its end)`` of every line of ``text``."""
    out, at = [], 0
    for line in text.split("\n"):
        out.append((at, line.rstrip("\r")))
        at += len(line) + 1
    return out


def _setext(lines: list[tuple[int, str]], i: int) -> int | None:
    """The level of line ``i`` when the next line underlines it (module docstring), else None."""
    if i + 1 >= len(lines) or not lines[i][1].strip() or lines[i][1].startswith((" ", "\t")):
        return None
    under = lines[i + 1][1]
    m = _UNDERLINE.fullmatch(under)
    if m is None or len(under.strip()) < 3:
        return None
    return {"=": 1, "-": 2}.get(m.group(1), 3)


def _markup(text: str, title_lines: bool) -> list[Section]:
    lines = _lines(text)
    heads: list[tuple[int, int, str]] = []
    fence = None
    for i, (at, line) in enumerate(lines):
        if (f := _FENCE.match(line)) and not title_lines:
            fence = None if fence == f.group(1) else (fence or f.group(1))
            continue
        if fence:
            continue
        if not title_lines and (m := _ATX.fullmatch(line)) and m.group(2):
            heads.append((at, len(m.group(1)), _collapse(m.group(2))))
        elif (level := _setext(lines, i)) is not None:
            heads.append((at, level, _collapse(line)))
        elif title_lines and _title_line(lines, i):
            heads.append((at, TITLE_LINE_LEVEL, _collapse(line)))
    return _close(heads, len(text))


def _title_line(lines: list[tuple[int, str]], i: int) -> bool:
    line = lines[i][1]
    before = i == 0 or not lines[i - 1][1].strip()
    after = i + 1 < len(lines) and not lines[i + 1][1].strip()
    return (
        before
        and after
        and 0 < len(line.rstrip()) <= 60
        and not line[0].isspace()
        and not line.rstrip().endswith((".", ",", ";", ":"))
        and not _UNDERLINE.fullmatch(line)
    )


def _python(text: str) -> list[Section]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):  # not Python 3, or nested too deep
        return []
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]  # Python's line ends
    out: list[Section] = []

    def visit(node: ast.AST, depth: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                last = child.end_lineno or child.lineno
                end = starts[last] if last < len(starts) else len(text)
                kind = "class" if isinstance(child, ast.ClassDef) else "def"
                out.append(Section(starts[first - 1], end, depth, f"{kind} {child.name}"))
                visit(child, depth + 1)
            else:
                visit(child, depth)

    visit(tree, 1)
    return sorted(out)


def outline(kind: str, text: str) -> list[Section]:
    """The sections of a document of file kind ``kind`` (``"html"``, ``"markup"``, ``"text"``,
    ``"python"``; any other: none) with file text ``text``, by start (module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"text: got {type(text).__name__}, expected str")
    if kind == "html":
        return _html(text)
    if kind in ("markup", "text"):
        return _markup(text, title_lines=kind == "text")
    if kind == "python":
        return _python(text)
    return []


def context_at(source: str, sections: list[Section], offset: int) -> str:
    """The context of a passage of ``source`` starting at ``offset`` (module docstring):
    ``file name > outer title > ... > inner title``, at most :data:`CONTEXT_CHARS` long."""
    holding = sorted((s.level, s.start, s.title) for s in sections if s.start <= offset < s.end)
    titles: list[str] = []
    for *_, title in holding:
        title = title.strip("*_` ")[:TITLE_CHARS].rstrip()
        if title and (not titles or titles[-1] != title):  # an <h1> repeating the <title>: once
            titles.append(title)
    name = PurePath(source).name
    while titles and len(" > ".join([name, *titles])) > CONTEXT_CHARS:
        titles.pop(0)
    return " > ".join([name, *titles])[:CONTEXT_CHARS]


def with_context(context: str, text: str) -> str:
    """What the index encodes and keyword-indexes for a passage: ``context + "\\n" + text``, or
    ``text`` alone when the context is empty."""
    return f"{context}\n{text}" if context else text
