"""The modules ``mutation_score.py`` measures and where it keeps its files (issue 17)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKSPACES = ROOT / ".mutation"
RESULTS_JSON = ROOT / "tools" / "mutation_results.json"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"
PLUGIN = "mutation_pytest_plugin"
# Imported by the fork server before it forks a process per mutant (none of them starts a JAX
# backend on import; torch is skipped where it is not installed). Not the package under test:
# code that runs at import (rule factories) must run in the mutant's own process, with the mutant
# active (importing jaxparadigm costs ~0.2 s).
PRELOAD = (
    "numpy",
    "ml_dtypes",
    "jax",
    "jax.numpy",
    "chex",
    "optax",
    "pytest",
    "hypothesis",
    "absl.testing.absltest",
    "absl.testing.parameterized",
    "torch",
)


@dataclass(frozen=True)
class Target:
    """One module of the core: the files mutmut mutates (globs) and the tests that run them."""

    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()  # test ids left out of the runner (each with its reason)


MODULES: dict[str, Target] = {
    "tensor": Target(("jaxparadigm/tensor/*.py",), ("tests/tensor",)),
    "autodiff": Target(
        (
            "jaxparadigm/autodiff/rules/*.py",
            "jaxparadigm/autodiff/registry.py",
            "jaxparadigm/autodiff/graph.py",
            "jaxparadigm/autodiff/reverse_mode.py",
        ),
        ("tests/autodiff",),
    ),
    "optim": Target(("jaxparadigm/optim/*.py",), ("tests/optim",)),
    "train.guard": Target(("jaxparadigm/train/guard.py",), ("tests/train/test_guard.py",)),
    "train.checkpoint": Target(
        ("jaxparadigm/train/checkpoint.py",),
        ("tests/train/test_checkpoint.py", "tests/train/test_checkpoint_damage.py"),
        # SIGKILLs a child process mid-save: under mutmut's in-process stats run its child
        # imports the trampolined package and the test failed ("2.orbax-checkpoint-tmp" not
        # cleaned on open; it passes under plain pytest), so mutmut refused to start.
        deselect=(
            "tests/train/test_checkpoint.py::"
            "test_sigkill_during_save_leaves_last_complete_checkpoint",
        ),
    ),
    "train.validation": Target(
        ("jaxparadigm/train/validation.py",), ("tests/train/test_validation.py",)
    ),
    "retrieval.ranking_metrics": Target(
        ("jaxparadigm/retrieval/ranking_metrics.py",), ("tests/retrieval/test_ranking_metrics.py",)
    ),
}

# mutmut's exit-code verdicts (mutmut.stats.status_by_exit_code), folded to what the table reports.
_KILLED = {1, 3}
_TIMEOUT = {36, -24, 24, 152, 255}
_SURVIVED = {0}
_NO_TESTS = {5, 33}
_SKIPPED = {34}
