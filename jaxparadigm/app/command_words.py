"""The CLI's subcommand names and the words every line it prints starts with (C5.1).

Standard library only: the console script (:mod:`jaxparadigm.console`) reads them before the CLI
has loaded, to name the command in its line about a Ctrl-C that came while it loaded, and
:mod:`jaxparadigm.cli` names the command the same way in its own lines (``jaxparadigm run:
interrupted``, ``jaxparadigm search: error: ...``). ``jaxparadigm.app.cli.COMMANDS`` holds the
handler of each of :data:`SUBCOMMANDS` (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SUBCOMMANDS", "command_named", "line_start"]

#: The subcommands, in the order ``jaxparadigm --help`` lists them.
SUBCOMMANDS = ("run", "claims", "search", "index", "serve", "bench")


def command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is one of :data:`SUBCOMMANDS`), for a
    line printed before the parser has read it; None when it names none."""
    return next((word for word in argv if word in SUBCOMMANDS), None)


def line_start(command: str | None) -> str:
    """``"jaxparadigm COMMAND"``, or ``"jaxparadigm"`` when no command is known: what every line
    the CLI prints about its own run begins with, before ``": "``."""
    return f"jaxparadigm {command}" if command else "jaxparadigm"
