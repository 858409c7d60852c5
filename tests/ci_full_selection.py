"""Tests moved out of the default run (``make test``) into CI's full run (``make test-ci-full``),
issues 25 and 35: ``make test`` must finish within five minutes on two cores; CI still runs every test.

Two lists, both read by ``tests/conftest.py``, which marks each collected test they name with
``ci_full`` (the default ``addopts`` deselect ``ci_full`` like ``slow``):

* :data:`CI_FULL`: node-id patterns, each with its reason. ``*`` and ``?`` are wildcards; every other
  character, ``[`` and ``]`` included, is literal (a parametrized id such as ``test_x[10]`` names
  exactly that case; with :mod:`fnmatch` its brackets were a character class and six patterns named
  no test).
* :data:`SLOW_TESTS_FILE` (``tests/ci_full_slow_tests.txt``): the tests that took at least
  ``tools/ci_full_split.py``'s threshold (setup + call + teardown) in a measured default run, by
  exact node id, written by that tool from the run's ``--durations=0`` log.

``tests/test_ci_full_selection.py`` checks that every pattern and every listed id names a
collected test, so a renamed test cannot silently come back to (or stay out of) the default run.
"""

from __future__ import annotations

import re
from pathlib import Path

#: (node-id pattern, why it is not needed in the default run).
CI_FULL = (
    (
        "*__with_device",
        "chex device variants (104 tests): the same computation as the __with_jit and "
        "__without_jit variants, which stay in the default run",
    ),
    ("*__without_device", "chex device variants, as above"),
    (
        "tests/claims/test_c?_*.py::*",
        "the claims measured end to end (C1-C5: MiniLM, torch oracle, load test; 110 s of the "
        "top 80); the decision rules stay in the default run on stored evidence (test_rules)",
    ),
    (
        "tests/retrieval/dense/test_ivf_search.py::test_list_major_equals_row_major_equals_exact",
        "hypothesis over tile widths, scans and devices (a compile per shape); the fixed case "
        "test_list_major_in_two_scans_equals_row_major_and_exact_on_shared_lists stays",
    ),
    (
        "tests/claims/test_evidence_fixture.py::test_fixture_matches_a_fresh_measurement*",
        "re-measures the stored evidence (12 s for C1.2 alone)",
    ),
    (
        "tests/train/test_grad_engine.py::test_loss_curves_equal_jax_within_1e_5_relative"
        "[charlm_pydoc.yaml]",
        "22 s; the mlp_spirals case of the same check stays",
    ),
    (
        "tests/train/test_guard.py::test_nan_injection_recovers_close_to_the_clean_run[10]",
        "7 s; the [0] case of the same check stays",
    ),
    (
        "tests/train/test_guard.py::test_loss_scale_overflows_are_not_guard_bad_steps",
        "12 s; loss-scale overflow handling is also checked by tests/train/test_step.py",
    ),
    (
        "tests/autodiff/test_tape.py::test_random_programs_match_jax_grad[True]",
        "10 s; the [False] case of the same random programs stays",
    ),
    (
        "tests/autodiff/test_rule_coverage.py::test_rule_matches_jax_first_order[cumprod_zeros]",
        "11 s; cumprod's rule stays checked by the other cumulative cases",
    ),
    (
        "tests/autodiff/test_rule_coverage.py::test_rule_matches_jax_first_order[cumlogsumexp]",
        "10 s; as above",
    ),
    (
        "tests/autodiff/test_port_lax_autodiff.py::test_scatter_max_min[1-min]",
        "11 s; test_scatter_max_min[2-max] stays",
    ),
    (
        "tests/optim/test_lion.py::LionVariantsTest::test_five_steps_equal_optax_bit_for_bit_mask_*"
        "__with_jit",
        "1.8 s each (two more jitted chains); the __without_jit variants of the masked lion "
        "stay, and test_lion_mask_leaves_the_unselected_leaves_undecayed",
    ),
    (
        "tests/train/test_checkpoint_kill_matrix.py::*",
        "2-process launches (a reference, then a kill and a resume per case, 15-30 s each): the "
        "whole checkpoint kill matrix runs in CI's full run (issue 34)",
    ),
    (
        "tests/retrieval/test_search_bench.py::*",
        "a benchmark's smoke run (issue 26); the kernel itself is tested in test_topk_search.py",
    ),
    (
        "tests/retrieval/test_ivf_host_crossover.py::*",
        "a benchmark's smoke run (9 s); both IVF scans are tested in dense/test_ivf_search.py",
    ),
    (
        "tests/retrieval/test_search_dtype_probe.py::*",
        "a probe's smoke run (issue 26); the search kernel is tested in test_topk_search.py",
    ),
    (
        "tests/retrieval/service/test_serve.py::test_serve_command_stops_cleanly_on_ctrl_c[ignored]",
        "a serve process end to end (model load, compile: ~10 s); the in-process service tests "
        "stay in the default run",
    ),
    (
        "tests/retrieval/index/test_index_build_devices.py::*",
        "a benchmark's smoke run (issue 26: two index-build processes); one two-device build "
        "against the one-device index stays in test_index_cli.py",
    ),
    (
        "tests/retrieval/test_retrieval_run_devices.py::*",
        "a benchmark's smoke run (issue 26: two `run` processes of the retrieval task); the task "
        "on every CPU device stays in test_evaluation.py",
    ),
    (
        "tests/test_gpu_check.py::test_tiny_cpu_run_prints_every_section_with_finite_figures",
        "benchmarks/gpu_check.py end to end at tiny sizes on the CPU (issue 26; 30-75 s: a dozen "
        "compiles); the shell script's no-GPU and GPU branches stay in the default run",
    ),
    (
        "tests/train/test_live_memory.py::*",
        "six `jaxparadigm run` processes on 8 forced devices under the live-buffer sampler "
        "(issue 50; 30-120 s each on 2 shared cores); the sampler's count is tested in "
        "test_live_buffers.py in the default run",
    ),
    (
        "tests/train/test_mesh_eight_devices.py::*",
        "fsdp_tensor on 8 forced devices: 3 x 100 steps, a checkpoint restore matrix and a run "
        "resumed across mesh shapes (issue 50; minutes); the 2 x 2 layout and refusals stay in "
        "the default run (test_mesh_layout.py)",
    ),
    (
        "tests/train/test_mesh_layout.py::test_a_short_2x2_run_equals_one_device_and_trains_the_"
        "model_in_place",
        "two short transformer runs, one of them on a 2 x 2 mesh (issue 50; 15-60 s); the 2 x 2 "
        "layout itself stays in the default run",
    ),
    (
        "tests/retrieval/test_search_parity.py::*_with_minilm",
        "every door with the real MiniLM (an index build, CLI subprocesses each loading the model, "
        "Chromium, a 2-process group: minutes); the CLI, library and serve parity over the hash "
        "encoder's index and the group's hybrid refusal stay in the default run",
    ),
    (
        "tests/retrieval/service/test_search_page_browser.py::"
        "test_the_ranking_control_defaults_to_hybrid_and_sends_the_mode_chosen",
        "Chromium (~2 s plus its start); the page's ranking control, its default and the body "
        "key it sends are checked without a browser in test_search_page_parts.py",
    ),
    (
        "tests/retrieval/service/test_served_search.py::"
        "test_hybrid_over_an_in_memory_index_fuses_its_documents_bm25",
        "MiniLM encodes (~5 s); serve's hybrid fusion stays checked in the default run over the "
        "hash encoder's folder index (test_serve_ranks_hybrid_by_default_...)",
    ),
    (
        "tests/app/test_run_ownership.py::"
        "test_an_unfinished_run_resumes_saying_so_or_starts_afresh_on_overwrite",
        "three training runs (~15 s); the refusal to restart an unfinished run over its "
        "checkpoints stays in the default run (test_a_fresh_start_over_an_unfinished_runs_...)",
    ),
    (
        "tests/app/test_run_ownership.py::"
        "test_ctrl_c_of_a_run_started_in_the_background_ends_the_same_way",
        "trains until its first checkpoint (~6 s); a background command's SIGINT stays checked "
        "in the default run during start-up (tests/app/test_interrupts.py)",
    ),
    (
        "tests/test_readme.py::test_make_demo_twice_exits_0_both_times",
        "trains configs/default.yaml's model (~16 s); the finished-run notice and --overwrite "
        "stay in the default run (tests/app/test_run_ownership.py, tests/test_user_path.py)",
    ),
    (
        "tests/retrieval/service/test_search_page_browser.py::"
        "test_marks_count_code_points_and_file_names_are_bidi_isolated",
        "Chromium (its start plus a service over its own index: ~13 s on 2 cores); the page's "
        "other browser tests run in the same selection",
    ),
    (
        "tests/retrieval/service/test_service_resets.py::"
        "test_clients_that_reset_leave_no_traceback_and_service_keeps_answering",
        "40 resetting clients against a started service (~3.5 s with its index build); the "
        "server's rule (a ConnectionError is quiet, any other exception keeps its traceback) "
        "stays in the default run (test_only_a_client_gone_away_is_quiet_...)",
    ),
)

#: The measured slow tests, one ``seconds<TAB>node id`` per line (``#`` lines are comments).
SLOW_TESTS_FILE = Path(__file__).with_name("ci_full_slow_tests.txt")


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` as a regular expression: ``*`` any run of characters, ``?`` one, the rest literal."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts) + r"\Z", re.S)


def slow_test_ids(path: Path = SLOW_TESTS_FILE) -> list[str]:
    """The node ids listed in ``path`` (``seconds<TAB>node id`` lines)."""
    ids = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            ids.append(line.split("\t", 1)[1])
    return ids
