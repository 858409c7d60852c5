"""The files under a user's paths: folders walked, every entry read or skipped with a reason (C1.1).

**Identity.** A file is keyed by its resolved real path (:func:`os.path.realpath`):
``docs/d0.txt``, its absolute path, ``docs/../docs/d0.txt`` and the same file named from another
working directory are one file, listed once.

**Every path the OS allows is listed or skipped with a reason.** Folders are walked sorted, hidden
entries skipped, symlinked folders not followed. The walk is iterative (no depth bound; a folder
whose path the OS refuses, e.g. past ``PATH_MAX``, is skipped "unreadable"). A name that is not
valid UTF-8 is skipped as "name not UTF-8" and shown with its bad bytes as ``\\xNN``. FIFOs,
sockets and devices are "unsupported type"; a symlink cycle is "symlink loop". A folder for which
``skip_folder`` answers true (the index builder passes its test for an index folder) is skipped as
"index folder", and so is a symlink to a file in such a folder: an index never reads itself.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from jaxparadigm.common.bounded_reading import mode_words, shown_name
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.file_kinds import file_kind
from jaxparadigm.retrieval.documents.skipped import Skipped

__all__ = ["collect_files"]

_INDEX_FOLDER = "holds an index's manifest.json: an index never reads itself"


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _bad_name(path: str) -> Skipped | None:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return Skipped(shown_name(path), "name not UTF-8", "rename it to UTF-8 to index it")
    return None


def _link_problem(p: Path) -> Skipped:
    """Why the symlink ``p`` leads to no file: a cycle, or nothing there."""
    try:
        target = os.readlink(p)
        os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Skipped(p.as_posix(), "symlink loop", "a cycle of symlinks")
        return Skipped(p.as_posix(), "dangling symlink", f"-> {shown_name(target)}")
    return Skipped(p.as_posix(), "unsupported type", "not a regular file")  # pragma: no cover


def _entry(
    entry: os.DirEntry, top: Path, skip: Callable[[Path], bool], lists: tuple[list, list, list]
) -> None:
    """Sort one folder entry into ``lists`` = (``dirs`` to walk, ``found`` to read,
    ``skipped``); a symlink to a file in a folder ``skip`` answers true for is skipped as
    "index folder" (the walk reaches a folder only through real folders, a file also through
    a link)."""
    dirs, found, skipped = lists
    p = top / entry.name
    try:
        is_dir = entry.is_dir()
    except OSError:  # a symlink cycle: ELOOP, told apart below
        is_dir = False
    if bad := _bad_name(p.as_posix()):
        skipped.append(bad)
    elif is_dir:
        if entry.is_symlink():
            skipped.append(Skipped(p.as_posix(), "symlinked folder", "not followed"))
        else:
            dirs.append(p)
    elif entry.is_symlink() and not p.exists():
        skipped.append(_link_problem(p))
    elif not entry.is_file():
        skipped.append(Skipped(p.as_posix(), "unsupported type", mode_words(entry.stat().st_mode)))
    elif file_kind(entry.name) is None:
        skipped.append(Skipped(p.as_posix(), "unsupported type", f"suffix {p.suffix}"))
    elif entry.is_symlink() and skip(_real(p).parent):
        skipped.append(Skipped(p.as_posix(), "index folder", f"a symlink into it: {_INDEX_FOLDER}"))
    else:
        found.append(p)


def _walk(root: Path, skip_folder: Callable[[Path], bool]) -> tuple[list[Path], list[Skipped]]:
    """The files under ``root`` (hidden entries skipped, symlinked folders not followed), with an
    explicit stack: no recursion, so no depth bound but the OS's own (``PATH_MAX``)."""
    found: list[Path] = []
    skipped: list[Skipped] = []
    stack = [root]
    while stack:
        top = stack.pop()
        if skip_folder(top):  # `index build docs --out docs/idx`, then `add docs`
            skipped.append(Skipped(shown_name(top), "index folder", _INDEX_FOLDER))
            continue
        dirs: list[Path] = []
        try:
            with os.scandir(top) as it:
                entries = sorted(
                    (e for e in it if not e.name.startswith(".")), key=lambda e: e.name
                )
            for entry in entries:
                try:
                    _entry(entry, top, skip_folder, (dirs, found, skipped))
                except OSError as exc:
                    path = shown_name(top / entry.name)
                    skipped.append(Skipped(path, "unreadable", exc.strerror or type(exc).__name__))
        except OSError as exc:
            skipped.append(
                Skipped(shown_name(top), "unreadable", exc.strerror or type(exc).__name__)
            )
        stack += reversed(dirs)
    found.sort(key=lambda p: p.relative_to(root).parts)
    return found, skipped


def collect_files(
    paths: Sequence[str | os.PathLike], *, skip_folder: Callable[[Path], bool] | None = None
) -> tuple[list[Path], list[Skipped]]:
    """``(files, skipped)``: the real paths of the files in ``paths`` (folders expanded), each once
    (C1.1).

    A path that does not exist, or that is neither a file nor a folder, raises
    :class:`InputError`; what a folder holds that cannot be indexed is returned in ``skipped``.
    ``skip_folder(folder)``: true for a folder never to read (skipped as "index folder"), also
    when a file in it is named directly.
    """
    skip = skip_folder or (lambda folder: False)
    if isinstance(paths, (str, os.PathLike)) or not paths:
        raise InputError(f"paths: got {paths!r}, expected a non-empty list of files or folders")
    out: list[Path] = []
    skipped: list[Skipped] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found, bad = _walk(path, skip)
            out += [_real(p) for p in found]
            skipped += bad
        elif path.is_file() and skip(_real(path).parent):
            skipped.append(Skipped(shown_name(_real(path)), "index folder", _INDEX_FOLDER))
        elif path.is_file():
            out.append(_real(path))
        elif path.is_symlink():
            raise InputError(
                f"{path}: a dangling symlink (-> {os.readlink(path)}); expected a file"
            )
        elif path.exists():
            raise InputError(f"{path}: not a regular file or folder; expected documents to index")
        else:
            raise InputError(f"{path}: no such file or folder; expected documents to index")
    return list(dict.fromkeys(out)), skipped  # one real path, one read
