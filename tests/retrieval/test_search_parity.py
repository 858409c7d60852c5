"""The same search through every door (C1.1, C5.2): ``search --index --json``, the library
(``search_with_excerpts`` with a SearchOptions), serve's ``POST /search`` JSON, the search page's
``data-row`` elements and a 2-process group give the same ids per mode -- hybrid and dense for the
doors that rank both; the group ranks dense and refuses hybrid in the type's one line.

The default run checks CLI (in-process, the encoder injected), library and serve over the hash
encoder's index; the ``*_with_minilm`` tests (CI's full run: a MiniLM index, CLI subprocesses,
Chromium, a process group) check every door with the real model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxparadigm.app import index_command_output
from jaxparadigm.app.search_flags import SEARCH_FLAGS
from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import IndexSearcher, SearchOptions, search_with_excerpts
from jaxparadigm.retrieval.search_options import MODES
from jaxparadigm.retrieval.service.index_service import index_service
from tests.retrieval.service.hash_service import hash_index

REPO = Path(__file__).resolve().parents[2]
QUERIES = ["open a file for reading"]  # the hash index's (each CLI call opens it and compiles)
#: over docs/api with MiniLM, hybrid and dense top-5 differ for both (checked in cli_ids)
MINILM_QUERIES = [
    "how do I resume a training run from its checkpoints",
    "reciprocal rank fusion of BM25 and dense ranks",
]
K = 4


def _served_ids(service, query: str, k: int, mode: str | None) -> list[int]:
    body = {"query": query, "k": k} | ({} if mode is None else {"mode": mode})
    status, answer = service.handle("/search", json.dumps(body).encode())
    assert status == 200, answer
    return [row for row, _ in answer["hits"]]


def test_cli_library_and_serve_give_the_same_ids_per_mode(
    tmp_path, minilm_tokenizer, monkeypatch, capsys
):
    index_dir, encoder = hash_index(tmp_path, minilm_tokenizer)
    monkeypatch.setattr(index_command_output, "_encoder", lambda _: encoder)
    searcher = IndexSearcher(index_dir)
    service = index_service(index_dir, encoder=encoder)  # what `serve` runs (handle: no socket)
    ranked = {mode: [] for mode in MODES}
    for query in QUERIES:
        for mode in MODES:
            options = SearchOptions(mode=mode, k=K)
            library = [
                h.row for h in search_with_excerpts(searcher, encoder, query, options=options)
            ]
            argv = ["search", query, "--index", str(index_dir), "--json", "--top-k", str(K)]
            assert cli_main([*argv, "--mode", mode]) == 0
            cli = [row for row, _ in json.loads(capsys.readouterr().out)["hits"]]
            assert library == cli == _served_ids(service, query, K, mode) and len(library) == K
            ranked[mode].append(library)
        assert cli_main(argv) == 0  # no --mode, no "mode": both doors rank hybrid
        default = [row for row, _ in json.loads(capsys.readouterr().out)["hits"]]
        assert default == _served_ids(service, query, K, None) == ranked["hybrid"][-1]
    assert ranked["hybrid"] != ranked["dense"]  # the modes differ here: a swap would be seen


def test_a_group_refuses_hybrid_in_the_types_one_line(tmp_path, capsys):
    with pytest.raises(InputError) as want:
        SearchOptions.for_process_group({"mode": "hybrid"}, 2, spelled=SEARCH_FLAGS)
    for head in (["search", "q"], ["serve"]):
        argv = [*head, "--index", str(tmp_path), "--num-processes", "2", "--mode", "hybrid"]
        assert cli_main(argv) == 2
        assert capsys.readouterr().err == f"jaxparadigm {head[0]}: error: {want.value}\n"


# -- every door with the real model (CI's full run) ------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "jaxparadigm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory, encoder) -> Path:
    """The API pages (real text) indexed with MiniLM in shards of <= 16 passages."""
    from jaxparadigm.retrieval.index.build import build_index

    out = tmp_path_factory.mktemp("parity") / "idx"
    build_index([REPO / "docs" / "api"], out, encoder, shard_rows=16)
    return out


@pytest.fixture(scope="module")
def cli_ids(minilm_index) -> dict[tuple[str, str], list[int]]:
    """``search --index --json`` (a subprocess, the real model) per (query, mode)."""
    out = {}
    for query in MINILM_QUERIES:
        for mode in MODES:
            r = _cli("search", query, "--index", str(minilm_index), "--json", "--mode", mode)
            assert r.returncode == 0, r.stderr
            out[query, mode] = [row for row, _ in json.loads(r.stdout)["hits"]]
    for query in MINILM_QUERIES:  # the modes differ: a door ranking the wrong one would be seen
        assert out[query, "hybrid"] != out[query, "dense"]
    return out


def test_cli_library_and_serve_agree_with_minilm(minilm_index, cli_ids, encoder):
    searcher = IndexSearcher(minilm_index)
    with index_service(minilm_index, encoder=encoder) as service:
        for (query, mode), want in cli_ids.items():
            options = SearchOptions(mode=mode)  # the CLI's defaults: k 5
            library = search_with_excerpts(searcher, encoder, query, options=options)
            assert [h.row for h in library] == want and len(want) == 5
            assert _served_ids(service, query, 5, mode) == want


def test_the_page_lists_the_clis_ids_in_both_modes_with_minilm(minilm_index, cli_ids, encoder):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; make oracles)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    query = MINILM_QUERIES[0]
    with index_service(minilm_index, encoder=encoder) as service, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(service.url.removesuffix("search"))
        page.select_option("#k", "5")
        rows = []
        for mode in ("hybrid", "dense"):  # the page's default first, then the control's other
            assert mode == "dense" or page.input_value("#mode") == "hybrid"
            page.select_option("#mode", mode)
            page.fill("#q", query)
            page.press("#q", "Enter")
            want = cli_ids[query, mode]
            for _ in range(400):  # the page's CSP forbids wait_for_function's eval
                rows = page.eval_on_selector_all(
                    "#results li.hit", "e => e.map(x => +x.dataset.row)"
                )
                if rows == want:
                    break
                page.wait_for_timeout(50)
            assert rows == want, (mode, rows, want)
        browser.close()


def test_a_two_process_group_gives_the_dense_ids_and_refuses_hybrid_with_minilm(
    minilm_index, cli_ids
):
    query = MINILM_QUERIES[0]
    r = _cli("search", query, "--index", str(minilm_index), "--json", "--num-processes", "2")
    assert r.returncode == 0, r.stderr
    assert [row for row, _ in json.loads(r.stdout)["hits"]] == cli_ids[query, "dense"]
    r = _cli(
        "search", query, "--index", str(minilm_index), "--num-processes", "2", "--mode", "hybrid"
    )
    with pytest.raises(InputError) as want:
        SearchOptions.for_process_group({"mode": "hybrid"}, 2, spelled=SEARCH_FLAGS)
    assert r.returncode == 2 and r.stderr == f"jaxparadigm search: error: {want.value}\n"
