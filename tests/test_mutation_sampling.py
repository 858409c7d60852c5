"""tools/mutation_score.py's sampling arithmetic (issue 17): the random sample and the
Wilson interval reported with a sampled mutation score."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "mutation_score.py"


@pytest.fixture(scope="module")
def ms():
    spec = importlib.util.spec_from_file_location("mutation_score_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_wilson_interval_matches_the_closed_form(ms):
    # Independent evaluation: the interval's ends solve (p - q)^2 = z^2 q (1 - q) / n for q.
    for detected, n in [(50, 100), (148, 150), (0, 10), (10, 10), (1, 3)]:
        lo, hi = ms.wilson_interval(detected, n)
        p, z = detected / n, 1.96
        a, b, c = 1 + z * z / n, -(2 * p + z * z / n), p * p
        disc = math.sqrt(b * b - 4 * a * c)
        assert lo == pytest.approx(100 * (-b - disc) / (2 * a), abs=1e-9)
        assert hi == pytest.approx(100 * (-b + disc) / (2 * a), abs=1e-9)
        assert 0.0 <= lo <= 100 * p <= hi <= 100.0
    assert ms.wilson_interval(50, 100) == pytest.approx((40.383, 59.617), abs=1e-3)
    with pytest.raises(ValueError, match="n must be positive"):
        ms.wilson_interval(0, 0)


def test_sample_is_uniform_without_replacement_and_reproducible(ms):
    names = [f"m{i:04d}" for i in range(1000)]
    first = ms.draw_sample(list(reversed(names)), 100, seed=3)
    assert first == ms.draw_sample(names, 100, seed=3)  # order of the input does not matter
    assert len(set(first)) == 100 and set(first) <= set(names)
    assert first != ms.draw_sample(names, 100, seed=4)
    assert ms.draw_sample(names[:5], 100, seed=0) == names[:5]  # fewer than asked: all of them
    # Uniform: over 200 seeds each name is drawn ~20 times (binomial, sd ~4.2).
    counts = dict.fromkeys(names, 0)
    for seed in range(200):
        for name in ms.draw_sample(names, 100, seed):
            counts[name] += 1
    assert 0 < min(counts.values()) and max(counts.values()) < 45


@pytest.mark.parametrize("population", [5, 95, 174, 333, 702, 2676])
def test_a_smaller_sample_of_the_same_seed_is_part_of_the_larger(ms, population):
    """CI's gate (issue 39) re-tests the first few mutants of the measured seed-39 samples: a
    sample of 3 must be inside the sample of 30 that was measured and killed."""
    names = [f"m{i:05d}" for i in range(population)]
    measured = set(ms.draw_sample(names, 30, 39))
    for size in (1, 2, 3, 6, 29):
        assert set(ms.draw_sample(names, size, 39)) <= measured
    assert set(ms.draw_sample(names, 3, 40)) != set(ms.draw_sample(names, 3, 39))


def test_the_ci_rotation_covers_every_module_in_consecutive_windows(ms):
    names = [f"m{i}" for i in range(19)]
    assert ms.rotation(names, 4, "0" * 40) == ["m0", "m1", "m2", "m3"]
    assert ms.rotation(names, 4, "12") == ["m18", "m0", "m1", "m2"]  # 0x12 = 18: wraps
    assert ms.rotation(names, 4, "") == names[:4]
    assert ms.rotation(names, 30, "5") == names[5:] + names[:5]  # at most every module, once
    seen = set()
    for start in range(0, 19, 4):  # offsets 0, 4, 8, ... cover all in ceil(19 / 4) = 5 windows
        seen |= set(ms.rotation(names, 4, format(start, "x")))
    assert seen == set(names)
