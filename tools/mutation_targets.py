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
        (
            "tests/train/test_checkpoint.py",
            "tests/train/test_checkpoint_damage.py",
            "tests/train/test_checkpoint_refusals.py",
            "tests/train/test_checkpoint_boundaries.py",
        ),
        # SIGKILLs a child process mid-save: under mutmut's in-process stats run its child
        # imports the trampolined package and the test failed ("2.orbax-checkpoint-tmp" not
        # cleaned on open; it passes under plain pytest), so mutmut refused to start.
        deselect=(
            "tests/train/test_checkpoint.py::"
            "test_sigkill_during_save_leaves_last_complete_checkpoint",
            # Checks the warning's stacklevel: mutmut's trampoline is one more frame between
            # the caller and all_steps, so under mutmut the warning names the trampoline.
            "tests/train/test_checkpoint_boundaries.py::"
            "test_the_incomplete_step_warning_names_the_callers_line",
        ),
    ),
    "train.validation": Target(
        ("jaxparadigm/train/validation.py",), ("tests/train/test_validation.py",)
    ),
    "retrieval.ranking_metrics": Target(
        ("jaxparadigm/retrieval/eval/ranking_metrics.py",),
        ("tests/retrieval/eval/test_ranking_metrics.py",),
    ),
}


def _tests(folder: str, *names: str) -> tuple[str, ...]:
    """The test files ``names`` under ``tests/folder`` (at any depth: test file names are unique)."""
    found = []
    for n in names:
        hits = sorted((ROOT / "tests" / folder).rglob(f"{n}.py"))
        if len(hits) != 1:
            raise ValueError(
                f"_tests: {n}.py is under tests/{folder} {len(hits)} times, expected once"
            )
        found.append(hits[0].relative_to(ROOT).as_posix())
    return tuple(found)


# The modules added or rewritten since 0a67870 (issue 39), each with the tests that exercise it
# (the files that import it or drive it through the CLI/service, no more: every mutant runs them).
ROUND_4: dict[str, Target] = {
    "autodiff.jvp_interpreter": Target(
        ("jaxparadigm/autodiff/jvp_interpreter.py",),
        _tests(
            "autodiff",
            "test_forward_mode",
            "test_jvp_rules",
            "test_control_flow_jvp",
            "test_custom_jvp_rules",
            "test_jax_api_forward_port",
            "test_jvp_interpreter_boundaries",
        ),
    ),
    "autodiff.rules.linalg": Target(
        ("jaxparadigm/autodiff/rules/linalg.py",),
        _tests(
            "autodiff",
            "test_linalg_rules",
            "test_linalg_boundaries",
            "test_tridiagonal_solve_rules",
            "test_jvp_rules",
            "test_rule_edge_cases",
        ),
    ),
    "autodiff.rules.reduction": Target(
        ("jaxparadigm/autodiff/rules/reduction.py", "jaxparadigm/autodiff/rules/reduce_window.py"),
        _tests(
            "autodiff",
            "test_rule_edge_cases",
            "test_jvp_rules",
            "test_port_lax_autodiff",
            "test_jax_lax_autodiff_port",
            "test_reverse_mode",
            "test_reduction_boundaries",
        ),
    ),
    "autodiff.rules.control_flow": Target(
        ("jaxparadigm/autodiff/rules/control_flow.py",),
        _tests(
            "autodiff",
            "test_control_flow_jvp",
            "test_jvp_rules",
            "test_reverse_mode",
            "test_port_custom_vjp",
            "test_rule_edge_cases",
            "test_control_flow_boundaries",
        ),
    ),
    "optim.schedules": Target(
        ("jaxparadigm/optim/schedules/*.py",),
        _tests(
            "optim",
            "test_schedules",
            "test_schedule_boundaries",
            "test_optax_schedule_cases",
            "test_inject",
        ),
    ),
    "optim.inject": Target(
        ("jaxparadigm/optim/inject.py",),
        _tests(
            "optim",
            "test_inject",
            "test_inject_boundaries",
            "test_optax_dropin",
            "test_optax_dropin_values",
        ),
    ),
    "retrieval.vector_search": Target(
        ("jaxparadigm/retrieval/dense/vector_search.py",),
        _tests(
            "retrieval", "test_vector_search", "test_vector_search_boundaries", "test_memory_index"
        ),
    ),
    "retrieval.manifest_schema": Target(
        ("jaxparadigm/retrieval/index/manifest_schema.py",),
        _tests(
            "retrieval",
            "test_manifest_schema_boundaries",
            "test_index_folder",
            "test_index_folder_hostile",
            "test_damaged_inputs",
            "test_index_reliability",
        ),
    ),
    "retrieval.index_store": Target(
        ("jaxparadigm/retrieval/index/store.py",),
        _tests(
            "retrieval",
            "test_index_folder",
            "test_index_folder_hostile",
            "test_index_folder_generated",
            "test_damaged_inputs",
            "test_index_reliability",
            "test_index_concurrency",
            "test_index_store_boundaries",
        ),
    ),
    "retrieval.index_build": Target(
        ("jaxparadigm/retrieval/index/build.py",),
        _tests(
            "retrieval",
            "test_index_build",
            "test_index_reliability",
            "test_index_folder",
            "test_index_generated_inputs",
            "test_index_store_boundaries",
        ),
    ),
    "retrieval.readable_text": Target(
        ("jaxparadigm/retrieval/documents/readable_text.py",),
        _tests(
            "retrieval",
            "test_readable_text_hostile",
            "test_readable_text_boundaries",
            "test_index_generated_inputs",
            "test_every_text_file",
        ),
    ),
    "retrieval.passages": Target(
        ("jaxparadigm/retrieval/documents/passages.py",),
        _tests("retrieval", "test_passages", "test_readable_text_boundaries", "test_index_build"),
    ),
    "retrieval.service": Target(
        (
            "jaxparadigm/retrieval/service/http_service.py",
            "jaxparadigm/retrieval/service/http_handler.py",
        ),
        _tests(
            "retrieval",
            "test_http_service",
            "test_service_limits",
            "test_service_protocol",
            "test_service_boundaries",
            "test_service_keep_alive",
        ),
    ),
    "config.yaml_loader": Target(
        ("jaxparadigm/config/yaml_loader.py",),
        (
            "tests/test_yaml_loader_limits.py",
            "tests/test_yaml_loader_boundaries.py",
            "tests/test_config.py",
            "tests/test_config_limits.py",
        ),
    ),
    "app.cpu_devices": Target(
        ("jaxparadigm/app/cpu_devices.py",),
        _tests("app", "test_cpu_device_counts", "test_cpu_devices", "test_cpu_devices_boundaries"),
    ),
    "retrieval.keyword_search": Target(
        (
            "jaxparadigm/retrieval/sparse/bm25.py",
            "jaxparadigm/retrieval/ranking/rank_fusion.py",
            "jaxparadigm/retrieval/ranking/excerpt.py",
        ),
        _tests(
            "retrieval",
            "test_keyword",
            "test_bm25_fusion",
            "test_hybrid_search",
            "test_excerpt",
            "test_search_results",
            "test_keyword_search_boundaries",
        ),
    ),
    "retrieval.document_files": Target(
        (
            "jaxparadigm/retrieval/documents/reading.py",
            "jaxparadigm/retrieval/documents/walking.py",
            "jaxparadigm/retrieval/documents/skipped.py",
            "jaxparadigm/common/bounded_reading.py",
            "jaxparadigm/retrieval/index/owned_files.py",
        ),
        _tests(
            "retrieval",
            "test_document_files_hostile",
            "test_document_files_boundaries",
            "test_every_text_file",
            "test_index_folder_generated",
            "test_index_folder_hostile",
        )
        + _tests("common", "test_bounded_reading"),
    ),
    "train.run_folder": Target(
        ("jaxparadigm/train/run_folder.py", "jaxparadigm/train/interrupt_guard.py"),
        (
            "tests/train/test_interrupt_guard.py",
            "tests/train/test_run_folder_boundaries.py",
            "tests/app/test_run_ownership.py",
        ),
    ),
}
MODULES.update(ROUND_4)
# The group ``round-4`` of mutation_score.py (make mutation-ci): the new modules and
# train/checkpoint.py, a core module the round rewrote (issue 39 lists it).
ROUND_4_GROUP = (*ROUND_4, "train.checkpoint")

# The modules added since b953ab2 that ROUND_4 does not hold (IVF, k-means, the request batcher,
# the process-group search, file kinds; BM25, rank fusion and excerpts are ROUND_4's
# retrieval.keyword_search), at their paths in the retrieval rooms, each with its tests.
ROUND_5: dict[str, Target] = {
    "retrieval.ivf": Target(
        (
            "jaxparadigm/retrieval/dense/ivf_search.py",
            "jaxparadigm/retrieval/dense/ivf_host_scan.py",
            "jaxparadigm/retrieval/index/ivf_build.py",
            "jaxparadigm/retrieval/index/ivf_store.py",
        ),
        _tests(
            "retrieval",
            "test_ivf_search",
            "test_ivf_host_scan",
            "test_ivf_host_probe",
            "test_ivf_index",
        ),
    ),
    "retrieval.kmeans": Target(
        ("jaxparadigm/retrieval/dense/kmeans.py",),
        _tests("retrieval", "test_kmeans", "test_ivf_search"),
    ),
    "retrieval.request_batcher": Target(
        ("jaxparadigm/retrieval/service/request_batcher.py",),
        _tests("retrieval", "test_request_batcher", "test_serve_batching"),
    ),
    "retrieval.process_search": Target(
        ("jaxparadigm/retrieval/index/process_search.py",),
        _tests("retrieval", "test_process_search"),
    ),
    "retrieval.file_kinds": Target(
        ("jaxparadigm/retrieval/documents/file_kinds.py",),
        _tests(
            "retrieval",
            "test_every_text_file",
            "test_document_files_hostile",
            "test_index_folder_generated",
        ),
    ),
}
MODULES.update(ROUND_5)
#: mutation_score.py's groups (``run round-5 --rotate K``): CI's windows rotate within each.
#: CI's round-5 window leaves out process_search: its paths run only inside a process group,
#: whose tests (CI's full run) are too slow to run once per mutant; its 3 sampled mutants all
#: survived the default-run tests (`make mutation MODULE=retrieval.process_search` runs it).
ROUND_5_GROUP = tuple(name for name in ROUND_5 if name != "retrieval.process_search")
GROUPS: dict[str, tuple[str, ...]] = {"round-4": ROUND_4_GROUP, "round-5": ROUND_5_GROUP}

# mutmut's exit-code verdicts (mutmut.stats.status_by_exit_code), folded to what the table reports.
_KILLED = {1, 3}
_TIMEOUT = {36, -24, 24, 152, 255}
_SURVIVED = {0}
_NO_TESTS = {5, 33}
_SKIPPED = {34}
