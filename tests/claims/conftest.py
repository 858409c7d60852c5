"""Running claim experiments for tests, with PyTorch or with ``JAXPARADIGM_NO_TORCH=1``."""

import pytest


def run_experiments(exps, no_torch: bool = False) -> dict:
    """{claim_id: Verdict} of ``exps`` run once; ``no_torch`` forces the path without PyTorch."""
    with pytest.MonkeyPatch.context() as mp:
        if no_torch:
            mp.setenv("JAXPARADIGM_NO_TORCH", "1")
        return {e.claim_id: e.run() for e in exps}


def require_torch():
    """Skip unless PyTorch is importable and not switched off by ``JAXPARADIGM_NO_TORCH``."""
    from jaxparadigm.claims.torch_side import torch_disabled

    pytest.importorskip("torch")
    if torch_disabled():
        pytest.skip("JAXPARADIGM_NO_TORCH is set: the claims run without PyTorch")
