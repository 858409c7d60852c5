"""The readable part of an HTML, Markdown or RST file, at the file's own character offsets (C1.1).

    html_readable(text)        tags, comments, <script>/<style>/<nav>/<footer>/... and elements
                               with role="navigation"/"search" blanked; entities decoded in place
    markup_boilerplate(text)   Markdown/RST lines that are only a link reference (``[x]: url``,
                               ``.. _x: url``) and runs of 2+ list items that are only a link

Both return a string of the same length as ``text`` in which what is not readable text is
*blanked*: every such character except ``"\\n"`` becomes a space. Offsets therefore stay the
file's own: the passage ``[start:end]`` of the result is the span ``[start:end]`` of the file, and
a window of only blanks holds no word piece, so it gives no passage. Whitespace does not change
the word pieces MiniLM reads. An entity (``&amp;``) becomes its character followed by blanks.
Only the standard library's :mod:`html.parser` is used; a skipped element ends where a browser
ends it (HTML's implied end tags: ``<li>`` ends an open ``<li>``, ``<div>`` an open ``<p>``, an end
tag every element opened inside it), and ``<!-->``, ``<!--->`` and ``--!>`` close a comment as in
a browser, so neither can blank the rest of a page.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from html.parser import HTMLParser

__all__ = ["html_readable", "markup_boilerplate", "blank"]

SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "nav", "footer", "svg"})
SKIP_ROLES = frozenset({"navigation", "search"})
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
#: Start tags that end an open ``<p>`` (HTML's "close a p element"), as a browser parses them.
P_CLOSERS = frozenset(
    "address article aside blockquote details dialog div dl fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre section table ul".split()
)
#: A start tag -> the open elements it ends implicitly (the nearest one, HTML's optional end tags).
IMPLIED_ENDS = {
    "li": frozenset({"li"}),
    "dt": frozenset({"dt", "dd"}),
    "dd": frozenset({"dt", "dd"}),
    "option": frozenset({"option"}),
    "optgroup": frozenset({"option", "optgroup"}),
    "tr": frozenset({"tr", "td", "th"}),
    "td": frozenset({"td", "th"}),
    "th": frozenset({"td", "th"}),
    "thead": frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}),
    "tbody": frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}),
    "tfoot": frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}),
    **{tag: frozenset({"p"}) for tag in P_CLOSERS},
}
#: Open elements an implied end does not reach past (a nested list's ``<li>`` ends no outer one).
SCOPE_TAGS = frozenset({"ul", "ol", "menu", "dl", "table", "select", "button", "html", "body"})
#: How many open elements an implied end looks down through for the element it ends.
IMPLIED_END_REACH = 64
#: Comments a browser closes early: ``<!-->`` and ``<!--->`` are whole (empty) comments, and
#: ``--!>`` ends a comment. :mod:`html.parser` reads the first two as the start of a comment that
#: runs to the next ``-->`` (blanking the page between); they are blanked before parsing instead.
ABRUPT_COMMENT = re.compile(r"<!--->|<!-->|--!>")


def blank(text: str) -> str:
    """``text`` with every character except ``"\\n"`` replaced by a space (same length) (C1.1)."""
    return re.sub(r"[^\n]", " ", text)


def _abrupt_comment(m: re.Match) -> str:
    return "-->".rjust(len(m.group())) if m.group() == "--!>" else blank(m.group())


class _Readable(HTMLParser):
    """Blanks what is not readable text. Open elements are kept on a stack with HTML's implied end
    tags (a ``<li>`` ends the open ``<li>``, a ``<div>`` the open ``<p>``, an end tag every element
    opened inside it), so a skipped element ends where a browser ends it."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.text = text
        self.out = list(blank(text))
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.open: list[str] = []  # the open (non-void) elements, outermost first
        self.counts: Counter[str] = Counter()  # how many of each tag are open
        self.skip: int | None = None  # stack index of the skipped element we are inside

    def _pos(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def _put(self, pos: int, chars: str, raw: str) -> None:
        if self.skip is None and self.text.startswith(raw, pos):
            chars = chars[: len(raw)]  # never longer than the characters it replaces
            self.out[pos : pos + len(chars)] = chars

    def _close_to(self, index: int) -> None:
        """Pop the open elements from ``index`` up; a skipped element among them ends."""
        for tag in self.open[index:]:
            self.counts[tag] -= 1
        del self.open[index:]
        if self.skip is not None and self.skip >= len(self.open):
            self.skip = None

    def _implied_end(self, tag: str) -> None:
        ends = IMPLIED_ENDS.get(tag)
        if not ends or not any(self.counts[t] for t in ends):
            return
        lowest = max(len(self.open) - IMPLIED_END_REACH, 0)
        for i in range(len(self.open) - 1, lowest - 1, -1):
            if self.open[i] in ends:
                self._close_to(i)
                return
            if self.open[i] in SCOPE_TAGS:
                return

    def handle_starttag(self, tag, attrs):
        self._implied_end(tag)
        if tag in VOID_TAGS:
            return
        self.open.append(tag)
        self.counts[tag] += 1
        if self.skip is None and (tag in SKIP_TAGS or dict(attrs).get("role") in SKIP_ROLES):
            self.skip = len(self.open) - 1

    def handle_endtag(self, tag):
        if self.counts[tag]:  # an end tag with no open element is ignored, as a browser does
            self._close_to(len(self.open) - 1 - self.open[::-1].index(tag))

    def handle_data(self, data):
        self._put(self._pos(), data, data)

    def handle_entityref(self, name):
        raw = f"&{name}"
        self._put(self._pos(), html.unescape(raw + ";"), raw)

    def handle_charref(self, name):
        raw = f"&#{name}"
        try:
            char = html.unescape(raw + ";")
        except (ValueError, OverflowError):  # pragma: no cover - unescape maps bad refs to U+FFFD
            return
        self._put(self._pos(), char, raw)


def html_readable(text: str) -> str:
    """The readable text of an HTML document, blanked in place (module docstring) (C1.1)."""
    if not isinstance(text, str):
        raise TypeError(f"text: got {type(text).__name__}, expected str")
    text = ABRUPT_COMMENT.sub(_abrupt_comment, text)  # same length: offsets stay the file's
    parser = _Readable(text)
    parser.feed(text)
    parser.close()
    return "".join(parser.out)


_LINK = (
    r"(?:\[[^\]\n]*\]\([^)\n]*\)|\[[^\]\n]*\]\[[^\]\n]*\]"
    r"|<?https?://[^\s>]+>?|`[^`\n]*<[^>\n]+>`__?)"
)
_LINK_REFERENCE = re.compile(r"[ \t]{0,3}(?:\[[^\]\n]+\]:|\.\. _[^:\n]+:)[ \t]*\S.*")
_LINK_ITEM = re.compile(rf"[ \t]*(?:[-*+]|\d+[.)])[ \t]+{_LINK}[ \t]*\r?")


def markup_boilerplate(text: str) -> str:
    """``text`` with link-reference lines and lists of bare links blanked (module docstring, C1.1).

    A run of link-only list items (blank lines may separate them) is blanked when it holds at
    least 2 items; a single link item is kept (it may be the answer)."""
    if not isinstance(text, str):
        raise TypeError(f"text: got {type(text).__name__}, expected str")
    out: list[str] = []
    run: list[int] = []
    lines = text.split("\n")

    def flush():
        items = [i for i in run if out[i].strip()]
        if len(items) >= 2:
            for i in items:
                out[i] = blank(out[i])
        run.clear()

    for line in lines:
        if _LINK_REFERENCE.fullmatch(line):
            out.append(blank(line))
        elif _LINK_ITEM.fullmatch(line):
            out.append(line)
            run.append(len(out) - 1)
        elif not line.strip() and run:
            out.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)
