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


def test_the_round_5_group_names_the_modules_added_since_b953ab2_and_ci_rotates_it(ms, monkeypatch):
    """ROUND_5 (IVF, k-means, request batcher, process-group search, file kinds) at their paths
    in the retrieval rooms, each glob matching a file and each test file present; ``round-5``
    expands to its rotation window like ``round-4``; the Makefile's mutation-ci runs and gates
    both windows."""
    root = SCRIPT.parents[1]
    targets = ms.MODULES
    five = ms.GROUPS["round-5"]
    assert five == (
        "retrieval.ivf",
        "retrieval.kmeans",
        "retrieval.request_batcher",
        "retrieval.file_kinds",
    )  # process_search: only in a process group (tools/mutation_targets.py says why)
    mutated = {p for name in five for glob in targets[name].mutate for p in root.glob(glob)}
    assert {p.relative_to(root).as_posix() for p in mutated} == {
        "jaxparadigm/retrieval/dense/ivf_search.py",
        "jaxparadigm/retrieval/dense/ivf_host_scan.py",
        "jaxparadigm/retrieval/index/ivf_build.py",
        "jaxparadigm/retrieval/index/ivf_store.py",
        "jaxparadigm/retrieval/dense/kmeans.py",
        "jaxparadigm/retrieval/service/request_batcher.py",
        "jaxparadigm/retrieval/documents/file_kinds.py",
    }
    for name in five:
        assert targets[name].tests and all((root / t).is_file() for t in targets[name].tests)
    assert not set(five) & set(ms.GROUPS["round-4"])
    monkeypatch.setattr(ms, "_commit", lambda: "2")
    assert ms.group_modules("round-5", 2) == ["retrieval.request_batcher", "retrieval.file_kinds"]
    monkeypatch.setattr(ms, "_commit", lambda: "7")  # 7 % 4 = 3: wraps
    assert ms.group_modules("round-5", 2) == ["retrieval.file_kinds", "retrieval.ivf"]
    assert ms.group_modules("round-5", None) == list(five)
    assert ms.group_modules("train.guard", 2) == ["train.guard"]
    recipe = (root / "Makefile").read_text().split("\nmutation-ci:")[1].split("\n\n")[0]
    for verb in ("run", "gate"):
        for group, k in (("round-4", "MUTATION_CI_MODULES"), ("round-5", "MUTATION_CI_MODULES_5")):
            assert f"mutation_score.py {verb} {group} --rotate $({k})" in recipe, recipe
