"""pytest plugin loaded by ``tools/mutation_score.py`` inside mutmut's workspace (issue 17).

mutmut learns which tests reach which function in one "stats" run of the whole test selection, by
recording every call of a trampolined function. A function that ``jax.jit`` (or an
``functools.lru_cache``) already traced for an earlier test is not called again, so the later test
would not be linked to it and would never be run against that function's mutants. In the stats
run only (``MUTANT_UNDER_TEST=stats``), every test therefore starts with empty JAX caches and empty
``lru_cache``s in ``jaxparadigm``. Mutant runs need no reset: each is a fresh forked process.

The runner keeps the tests moved to CI's full run for speed (``ci_full``, tests/ci_full_selection.py):
they stay in every mutant's test selection, so the default run's speed costs no killed mutant.
"""

from __future__ import annotations

import functools
import os
import sys


def _clear_jaxparadigm_lru_caches() -> None:
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "jaxparadigm" or name.startswith("jaxparadigm.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()


_IMPORT_TIME_HITS: set[str] = set()


def pytest_configure(config) -> None:
    """Select ``not slow`` (pyproject's addopts also leave out ``ci_full``)."""
    config.option.markexpr = "not slow"


def pytest_collection_finish(session) -> None:  # noqa: ARG001 - pytest hook signature
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    from mutmut.state import state

    _IMPORT_TIME_HITS.update(state()._stats)
    state()._stats.clear()


def pytest_runtest_setup(item) -> None:  # noqa: ARG001 - pytest hook signature
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    from mutmut.state import state

    state()._stats.update(_IMPORT_TIME_HITS)
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    _clear_jaxparadigm_lru_caches()
