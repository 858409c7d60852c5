"""C4.3's evidence: the library's int32 counters beside PyTorch's LinearLR, and its Markdown table
(moved from tests/optim/test_schedules.py with the code, issue 22)."""

import numpy as np
import pytest
from absl.testing import absltest

from jaxparadigm.claims.evidence import overflow as E

INT32_MAX = 2**31 - 1


class OverflowEvidenceTest(absltest.TestCase):
    def test_naive_counter_wraps_and_lr_goes_negative(self):
        demo = E.overflow_evidence(window=3, with_torch=False)
        self.assertEqual(demo.steps[0], INT32_MAX - 2)
        self.assertEqual(len(demo.steps), 6)
        wrapped = [i for i, s in enumerate(demo.steps) if s > INT32_MAX]
        self.assertEqual(demo.naive_count[wrapped[0]], -(2**31))
        self.assertTrue(all(demo.safe_count[i] == INT32_MAX for i in wrapped))
        self.assertTrue(all(demo.lr_unclamped[i] < 0 for i in wrapped))
        self.assertTrue(all(abs(demo.lr_naive_clamped[i] - 1e-3 / 3) < 1e-9 for i in wrapped))
        np.testing.assert_allclose(demo.lr_safe, 1e-3, rtol=1e-6)
        np.testing.assert_allclose(demo.lr_python_int, 1e-3, rtol=1e-6)
        self.assertIsNone(demo.torch_lr)
        self.assertIn("-2147483648", demo.table())

    def test_table_layout(self):
        demo = E.OverflowEvidence((7,), (8,), (9,), (0.5,), (0.25,), (0.125,), (1.0,), None, None)
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

    def test_defaults_are_documented_ones(self):
        """Defaults: the window straddles 2**31 - 1 by 4 steps; LinearLR(1/3, 1, 5) at 1e-3."""
        demo = E.overflow_evidence(with_torch=False)
        self.assertEqual(demo.steps, tuple(range(INT32_MAX - 3, INT32_MAX + 5)))
        # total_iters=5 and start 1/3: a counter wrapped to -2**31 gives this unclamped rate.
        np.testing.assert_allclose(
            demo.lr_unclamped[4], 1e-3 * (1 / 3 + (2 / 3) * (-(2**31)) / 5), rtol=1e-6
        )
        np.testing.assert_allclose(demo.lr_naive_clamped[4], 1e-3 / 3, rtol=1e-6)
        np.testing.assert_allclose(demo.lr_safe, 1e-3, rtol=1e-6)


@pytest.mark.crosscheck
def test_torch_linear_lr_past_int32():
    pytest.importorskip("torch")
    # What torch really does near 2**31 - 1: last_epoch is a Python int, nothing wraps, and the
    # recursive form keeps the final value. The claim "LinearLR turns negative" does not hold.
    demo = E.overflow_evidence(
        window=4, base_lr=0.2, start_factor=0.25, end_factor=0.9, total_iters=6
    )
    assert demo.torch_last_epoch[-1] == INT32_MAX + 4
    assert all(isinstance(e, int) for e in demo.torch_last_epoch)
    np.testing.assert_allclose(demo.torch_lr, 0.2 * 0.9, rtol=1e-6)
    np.testing.assert_allclose(demo.lr_safe, demo.torch_lr, rtol=1e-6)
    assert min(demo.torch_lr) > 0 and min(demo.lr_unclamped) < 0
