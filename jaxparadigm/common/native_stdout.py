"""A launched worker's stdout for Python alone: what C++ libraries print goes to stderr.

``jaxparadigm.train.launch`` starts each worker of a group with :data:`ENV_NATIVE_STDOUT` set to
``stderr``; the worker's first step (``jaxparadigm.cli.main``) calls
:func:`keep_stdout_for_python`, so that gloo's "[Gloo] Rank 0 is connected to 1 peer ranks"
lines, which two of its threads may write in interleaved pieces, never land inside a document the
command prints on stdout (``search --json``). jax-free, so the CLI calls it before JAX loads.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping

__all__ = ["ENV_NATIVE_STDOUT", "keep_stdout_for_python"]

#: Set to ``stderr`` in a launched worker: :func:`keep_stdout_for_python` moves the process's
#: native writes to file descriptor 1 over to its stderr.
ENV_NATIVE_STDOUT = "JAXPARADIGM_NATIVE_STDOUT"


def keep_stdout_for_python(environ: Mapping[str, str] | None = None) -> bool:
    """In a launched worker (:data:`ENV_NATIVE_STDOUT` is ``stderr``): point file descriptor 1 at
    the process's stderr and give ``sys.stdout`` a copy of the old descriptor 1, so that what C++
    libraries print (gloo's "connected to N peer ranks" lines, written in pieces by several
    threads) never lands inside a document the command prints on stdout. Returns whether it did.
    Call it first, before anything holds ``sys.stdout``."""
    if (os.environ if environ is None else environ).get(ENV_NATIVE_STDOUT) != "stderr":
        return False
    old = sys.stdout
    old.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = io.TextIOWrapper(
        io.FileIO(fd, "w"),
        encoding=old.encoding,
        errors=old.errors,
        line_buffering=True,
        write_through=True,
    )
    return True
