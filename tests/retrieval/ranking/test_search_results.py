"""search_with_excerpts / search_response (what `search --index` runs: hybrid by default, each
hit's cosine and best excerpt) and `search --index [--mode dense] [--json]` (issue 35, C1.1)."""

from __future__ import annotations

import json

import pytest

from jaxparadigm import retrieval
from jaxparadigm.app import index_command_output
from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import IndexSearcher, build_index
from jaxparadigm.retrieval.ranking.excerpt import best_excerpt
from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search
from jaxparadigm.retrieval.ranking.search_results import (
    SCORE_MEANING,
    passage_record,
    search_response,
    search_with_excerpts,
)

TEXTS = [
    "The heron waits in shallow water for fish to pass. It stands still for an hour.",
    "Compilers turn source code into machine instructions. Linkers join the objects.",
    "Cats sleep a lot. A kestrel hovers over the field before it dives on a vole.",
    "Sourdough needs a starter, flour, water and salt.",
]


@pytest.fixture
def searcher(tmp_path, hash_encoder):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, t in enumerate(TEXTS):
        (folder / f"d{i}.txt").write_text(t)
    build_index([folder], tmp_path / "idx", hash_encoder, chunk_tokens=40, overlap=4)
    return IndexSearcher(tmp_path / "idx")


def test_the_new_retrieval_names_are_exported():
    for name in (
        "reciprocal_rank_fusion bm25_index bm25_scores bm25_top BM25Index hybrid_search "
        "keyword_index best_excerpt Excerpt mark_text search_with_excerpts search_response"
    ).split():
        assert name in retrieval.__all__ and getattr(retrieval, name) is not None


def test_hybrid_is_the_default_and_keeps_the_cosine(searcher, hash_encoder):
    query = "kestrel hovers"
    got = search_with_excerpts(searcher, hash_encoder, query, 3)
    want = hybrid_search(searcher, hash_encoder, query, 3)[0]
    assert [(h.row, h.score) for h in got] == [(h.row, h.score) for h in want]
    assert got[0].source.endswith("d2.txt")  # BM25 finds the only passage with the words
    q = hash_encoder.vector(query)
    for h in got:  # the cosine is the dense similarity, not the fused score
        x = searcher.source.take(h.row, h.row + 1)[0]
        assert h.cosine == pytest.approx(float(x @ q), abs=1e-6)
        assert h.excerpt == best_excerpt(h.text, query, 240)
    ranks = (1, _dense_rank(searcher, hash_encoder, query, got[0].row))  # BM25: the only match
    assert got[0].score == pytest.approx(sum(1 / (60 + r) for r in ranks))
    dense = search_with_excerpts(searcher, hash_encoder, query, 3, mode="dense")
    assert [(h.row, h.score) for h in dense] == [
        (h.row, h.score) for h in searcher.search(hash_encoder, query, 3)[0]
    ]
    assert all(h.cosine == h.score for h in dense)


def _dense_rank(searcher, encoder, query, row):
    hits = searcher.search(encoder, query, len(searcher))[0]
    return [h.row for h in hits].index(row) + 1


def test_excerpt_is_the_best_sentence_with_marks(searcher, hash_encoder):
    hit = search_with_excerpts(searcher, hash_encoder, "kestrel field", 1)[0]
    e = hit.excerpt
    assert e.text.startswith("A kestrel hovers") and hit.text[e.start : e.end] == e.text
    assert [hit.text[s:t] for s, t in e.marks] == ["kestrel", "field"]


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"mode": "bm25"}, r"^search\.mode: got 'bm25', expected one of 'hybrid', 'dense'$"),
        ({"k": 0}, r"^search\.k: got 0, expected an int >= 1$"),
        ({"k": True}, r"^search\.k: got True, expected int$"),
        ({"approx": True}, r"^search\.approx=True: approximates the dense ranking alone, but "),
        ({"excerpt_chars": 0}, r"^search\.excerpt_chars: got 0, expected an int >= 1$"),
        ({"options": "dense"}, r"^options: got str, expected a SearchOptions$"),
    ],
)
def test_bad_arguments_are_one_clear_error(searcher, hash_encoder, kw, match):
    with pytest.raises(TypeError if "options" in kw else InputError, match=match):
        search_with_excerpts(searcher, hash_encoder, "kestrel", **kw)


def test_search_response_is_serves_shape_plus_what_the_score_is(searcher, hash_encoder):
    hits = search_with_excerpts(searcher, hash_encoder, "water", 2)
    payload = search_response(hits)
    assert payload["hits"] == [[h.row, h.score] for h in hits]
    assert payload["mode"] == "hybrid" and payload["score"] == SCORE_MEANING["hybrid"]
    for p, h in zip(payload["passages"], hits, strict=True):
        assert {k: p[k] for k in ("source", "start", "end", "text")} == passage_record(h)
        assert (
            passage_record(h) == searcher.passage(h.row)._asdict()
        )  # what serve's passage_of gives
        assert p["cosine"] == h.cosine
        e = p["excerpt"]
        assert h.text[e["start"] : e["end"]] == e["text"]
        assert all(h.text[s:t].casefold() == "water" for s, t in e["marks"])
    assert json.loads(json.dumps(payload)) == payload  # plain JSON


def test_search_json_has_serves_hits_and_passages(tiny_index, encoder, capsys):
    """`search --index --json` and serve answer the same hits and passages for a dense search."""
    from jaxparadigm.retrieval.service.index_service import index_service

    query = "how do I pause the program"
    argv = ["search", query, "--index", str(tiny_index), "--top-k", "2", "--json"]
    assert cli_main([*argv, "--mode", "dense"]) == 0
    printed = json.loads(capsys.readouterr().out)
    service = index_service(tiny_index, encoder=encoder)
    body = {"query": query, "k": 2, "mode": "dense", "excerpts": False}
    status, served = service.handle("/search", json.dumps(body).encode())
    assert status == 200
    assert printed["hits"] == served["hits"] and printed["mode"] == served["mode"] == "dense"
    keys = ("source", "start", "end", "text")
    assert [{k: p[k] for k in keys} for p in printed["passages"]] == served["passages"]
    assert cli_main(argv) == 0  # the default: hybrid, its fused score named
    hybrid = json.loads(capsys.readouterr().out)
    assert hybrid["mode"] == "hybrid" and "reciprocal rank fusion" in hybrid["score"]
    assert all(0 < s <= 2 / 61 for _, s in hybrid["hits"])
    status, served = service.handle("/search", json.dumps({"query": query, "k": 2}).encode())
    assert status == 200 and served["hits"] == hybrid["hits"]  # serve's default: hybrid too
    assert (served["mode"], served["score"]) == (hybrid["mode"], hybrid["score"])


@pytest.fixture
def tiny_index(tmp_path, encoder):
    docs = tmp_path / "docs"
    docs.mkdir()
    texts = {
        "files.md": "To open a file for reading, call open(path) and read its lines.",
        "sleep.md": "The time module's sleep function pauses the program for some seconds.",
        "sets.md": "A set holds unique elements; add inserts one and union merges two sets.",
    }
    for name, text in texts.items():
        (docs / name).write_text(text, encoding="utf-8")
    build_index([docs], tmp_path / "idx", encoder)
    return tmp_path / "idx"


def test_search_text_marks_words_and_names_the_score(searcher, hash_encoder, monkeypatch, capsys):
    monkeypatch.setattr(index_command_output, "_encoder", lambda _: hash_encoder)
    idx = str(searcher.index_dir)
    assert cli_main(["search", "kestrel field", "--index", idx, "--top-k", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("mode: hybrid; score: reciprocal rank fusion")
    assert out[2].startswith("  1. [0.0") and out[2].endswith(f"d2.txt [0:{len(TEXTS[2])}]")
    assert (
        out[3].startswith("     (cos ") and "A «kestrel» hovers over the «field» before" in out[3]
    )
    assert cli_main(["search", "kestrel field", "--index", idx, "--mode", "dense"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("mode: dense; score: cosine") and "(cos" not in "\n".join(out)
    assert cli_main(["search", "kestrel", "--index", idx, "--approx"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "jaxparadigm search: error: --approx=True: approximates the dense ranking alone, but "
        "--mode='hybrid'; expected --mode='dense'\n"
    )
    assert cli_main(["search", "kestrel", "--json"]) == 2  # no index
    assert "--json: searches an index; add --index DIR" in capsys.readouterr().err
