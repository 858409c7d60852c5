"""The files an index folder's writer owns: it creates them without following a link, locks the
folder through a regular file only, and deletes nothing but its own names (C1.1).

    OWNED_FILE                  its names, matched in full: shard_NNNNN-<10 hex>.npy|.jsonl,
                                their temporaries shard_NNNNN.<pid>.<8 hex>.npy|.jsonl.tmp,
                                manifest.json.<pid>.<8 hex>.tmp, the inverted lists
                                ivf-<10 hex>.KIND.npy and ivf.<pid>.<8 hex>.KIND.npy.tmp
    create_new(path)            a new file opened for writing: O_CREAT | O_EXCL | O_NOFOLLOW, so a
                                name that exists (a symlink included) is never written through
    index_lock(dir, command)    hold dir/lock (an exclusive flock); a lock that is a symlink, a FIFO
                                or anything but a regular file is refused naming the path
    remove_unreferenced(dir, m) delete the regular files matching OWNED_FILE that manifest ``m``
                                does not name; a user's ``shard_notes.txt`` or a ``shard_backup/``
                                folder is never touched
    holds_index(folder)         whether ``folder/manifest.json`` is an index's (its first bytes
                                name FORMAT) or ``folder/lock`` is index_lock's (LOCK_TEXT): such
                                a folder is never read as documents

A link is never followed by a writer: ``lock`` is opened with ``O_NOFOLLOW`` and checked with
``fstat`` to be a regular file before ``flock``/``ftruncate``; temporaries are created with
``O_EXCL`` (which fails on an existing link); final names are put in place by ``os.replace``,
which replaces a link itself, never its target.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import IO

from jaxparadigm.common.file_lock import file_lock

__all__ = [
    "FORMAT",
    "MANIFEST",
    "LOCK",
    "OWNED_FILE",
    "create_new",
    "index_lock",
    "remove_unreferenced",
    "holds_index",
    "LOCK_TEXT",
]

FORMAT = "jaxparadigm-index"
MANIFEST = "manifest.json"
LOCK = "lock"
OWNED_FILE = re.compile(
    r"shard_\d{5,}-[0-9a-f]{10}\.(?:npy|jsonl)"
    r"|shard_\d{5,}\.\d+\.[0-9a-f]{8}\.(?:npy|jsonl)\.tmp"
    r"|manifest\.json\.\d+\.[0-9a-f]{8}\.tmp"
    r"|ivf-[0-9a-f]{10}\.(?:centroids|offsets|ids|rows)\.npy"
    r"|ivf\.\d+\.[0-9a-f]{8}\.(?:centroids|offsets|ids|rows)\.npy\.tmp"
)
#: What :func:`index_lock` writes into ``lock``: ``pid N (index build, since 2026-01-01 12:00:00)``.
LOCK_TEXT = re.compile(
    rb"pid \d+ \((?:index build|index add|index ivf|SemanticIndex\.save), since "
)
_SNIFF = 256  # bytes of manifest.json read by holds_index (json.dump puts "format" first)


def create_new(path: Path, text: bool) -> IO:
    """``path`` created and opened for writing; refused if anything (a link too) has that name."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "w", encoding="utf-8") if text else os.fdopen(fd, "wb")


def index_lock(index_dir: Path, command: str) -> contextlib.AbstractContextManager[None]:
    """Hold ``INDEX_DIR/lock`` while ``command`` changes the index (C1.1): the one advisory lock
    of :func:`jaxparadigm.common.file_lock.file_lock`.

    A second writer gets :class:`InputError` ``"index is locked by pid N (...)"`` at once. The
    lock belongs to the open file, so it ends with the process that holds it: a lock file left by
    a process that died is simply taken over (its pid is only shown in messages). A ``lock`` that
    is a symlink (even to a regular file) or not a regular file is refused, naming it."""

    def busy(holder: str) -> str:
        return (
            f"{index_dir}: index is locked by {holder}; wait for it to finish (the lock ends "
            "when that process exits), then run this again"
        )

    return file_lock(index_dir / LOCK, command, what="the index's lock file", busy=busy)


def remove_unreferenced(index_dir: Path, manifest: dict) -> list[str]:
    """Delete the writer's own files (:data:`OWNED_FILE`, regular files only) the manifest does
    not name (the shards of ``pending.base``, an add's starting point, are kept); returns their
    names. Anything else in the folder is left alone. Call it only under :func:`index_lock`."""
    base = (manifest.get("pending") or {}).get("base") or {}
    shards = manifest["shards"] + base.get("shards", [])
    keep = {f"{s['name']}{ext}" for s in shards for ext in (".npy", ".jsonl")}
    if manifest.get("ivf"):  # the inverted lists
        kinds = ("centroids", "offsets", "ids", "rows")
        keep |= {f"{manifest['ivf']['name']}.{kind}.npy" for kind in kinds}
    removed = []
    with os.scandir(index_dir) as it:
        names = sorted(e.name for e in it if e.is_file(follow_symlinks=False))
    for name in names:
        if name not in keep and OWNED_FILE.fullmatch(name):
            with contextlib.suppress(FileNotFoundError):
                (index_dir / name).unlink()
                removed.append(name)
    return removed


def _head(path: Path) -> bytes:
    """The first bytes of ``path`` if it is a regular file (no link followed), else ``b""``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        return os.pread(fd, _SNIFF, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)


def holds_index(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds an index: a regular ``manifest.json`` whose first bytes name
    :data:`FORMAT` (a browser extension's ``manifest.json`` does not), or -- a build killed
    before its first manifest -- a ``lock`` written by :func:`index_lock` (:data:`LOCK_TEXT`)."""
    folder = Path(folder)
    return f'"{FORMAT}"'.encode() in _head(folder / MANIFEST) or bool(
        LOCK_TEXT.match(_head(folder / LOCK))
    )
