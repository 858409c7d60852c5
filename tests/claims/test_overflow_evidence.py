"""C4.3's evidence: the library's int32 counters beside PyTorch's LinearLR, and its Markdown table
(moved from tests/optim/test_schedules.py with the code, issue 22)."""

import numpy as np
import pytest
from absl.testing import absltest

from jaxparadigm.claims.evidence import overflow as E
from jaxparadigm.optim.schedules import OverflowDemo

INT32_MAX = 2**31 - 1
# LinearLR(1/3 -> 1, 5 iterations) at 1e-3: C4.3's warmup (the library's defaults too).
WARMUP = dict(base_lr=1e-3, start_factor=1 / 3, end_factor=1.0, total_iters=5)


class OverflowEvidenceTest(absltest.TestCase):
    def test_naive_counter_wraps_and_lr_goes_negative(self):
        evidence = E.overflow_evidence(window=3, with_torch=False, **WARMUP)
        demo = evidence.demo
        self.assertEqual(demo.steps[0], INT32_MAX - 2)
        self.assertEqual(len(demo.steps), 6)
        wrapped = [i for i, s in enumerate(demo.steps) if s > INT32_MAX]
        self.assertEqual(demo.naive_count[wrapped[0]], -(2**31))
        self.assertTrue(all(demo.safe_count[i] == INT32_MAX for i in wrapped))
        self.assertTrue(all(demo.lr_unclamped[i] < 0 for i in wrapped))
        self.assertTrue(all(abs(demo.lr_naive_clamped[i] - 1e-3 / 3) < 1e-9 for i in wrapped))
        np.testing.assert_allclose(demo.lr_safe, 1e-3, rtol=1e-6)
        np.testing.assert_allclose(demo.lr_python_int, 1e-3, rtol=1e-6)
        self.assertIsNone(evidence.torch_lr)
        self.assertIn("-2147483648", evidence.table())

    def test_table_layout(self):
        demo = E.OverflowEvidence(
            OverflowDemo((7,), (8,), (9,), (0.5,), (0.25,), (0.125,), (1.0,)), None, None
        )
        self.assertEqual(
            demo.table(),
            "| step | naive int32 | safe int32 | lr unclamped (naive) | lr clamped (naive) "
            "| lr safe | lr python int | torch LinearLR | torch last_epoch |\n"
            "|---|---|---|---|---|---|---|---|---|\n"
            "| 7 | 8 | 9 | 0.5 | 0.25 | 0.125 | 1 | n/a | n/a |",
        )
        torch_row = demo._replace(torch_lr=(0.0625,), torch_last_epoch=(11,)).table()
        self.assertEqual(
            torch_row.splitlines()[-1], "| 7 | 8 | 9 | 0.5 | 0.25 | 0.125 | 1 | 0.0625 | 11 |"
        )

    def test_center_defaults_to_the_int32_limit(self):
        """Only ``center`` has a default (the int32 limit); the warmup is the caller's."""
        demo = E.overflow_evidence(window=4, with_torch=False, **WARMUP).demo
        self.assertEqual(demo.steps, tuple(range(INT32_MAX - 3, INT32_MAX + 5)))
        with self.assertRaises(TypeError):
            E.overflow_evidence(window=4, with_torch=False)


@pytest.mark.crosscheck
def test_torch_linear_lr_past_int32():
    pytest.importorskip("torch")
    # What torch really does near 2**31 - 1: last_epoch is a Python int, nothing wraps, and the
    # recursive form keeps the final value. The claim "LinearLR turns negative" does not hold.
    ev = E.overflow_evidence(
        window=4, base_lr=0.2, start_factor=0.25, end_factor=0.9, total_iters=6, with_torch=True
    )
    assert ev.torch_last_epoch[-1] == INT32_MAX + 4
    assert all(isinstance(e, int) for e in ev.torch_last_epoch)
    np.testing.assert_allclose(ev.torch_lr, 0.2 * 0.9, rtol=1e-6)
    np.testing.assert_allclose(ev.demo.lr_safe, ev.torch_lr, rtol=1e-6)
    assert min(ev.torch_lr) > 0 and min(ev.demo.lr_unclamped) < 0
