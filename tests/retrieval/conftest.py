"""One MiniLM encoder per test session (loading and jit compiles are the slow part)."""

import pytest


@pytest.fixture(scope="session")
def encoder():
    from jaxparadigm.retrieval.evaluation import _cached_encoder

    return _cached_encoder(None)
