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
Only the standard library's :mod:`html.parser` is used.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

__all__ = ["html_readable", "markup_boilerplate", "blank"]

SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "nav", "footer", "svg"})
SKIP_ROLES = frozenset({"navigation", "search"})
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


def blank(text: str) -> str:
    """``text`` with every character except ``"\\n"`` replaced by a space (same length) (C1.1)."""
    return re.sub(r"[^\n]", " ", text)


class _Readable(HTMLParser):
    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.text = text
        self.out = list(blank(text))
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.skip: list | None = None  # [tag, depth] of the skipped element we are inside

    def _pos(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def _put(self, pos: int, chars: str, raw: str) -> None:
        if self.skip is None and self.text.startswith(raw, pos):
            chars = chars[: len(raw)]  # never longer than the characters it replaces
            self.out[pos : pos + len(chars)] = chars

    def handle_starttag(self, tag, attrs):
        if self.skip is not None:
            self.skip[1] += tag == self.skip[0]
        elif tag not in VOID_TAGS and (tag in SKIP_TAGS or dict(attrs).get("role") in SKIP_ROLES):
            self.skip = [tag, 1]

    def handle_endtag(self, tag):
        if self.skip is not None and tag == self.skip[0]:
            self.skip[1] -= 1
            if self.skip[1] == 0:
                self.skip = None

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
    parser = _Readable(text)
    parser.feed(text)
    parser.close()
    return "".join(parser.out)


_LINK = r"(?:\[[^\]\n]*\]\([^)\n]*\)|\[[^\]\n]*\]\[[^\]\n]*\]|<?https?://[^\s>]+>?|`[^`\n]*<[^>\n]+>`__?)"
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
