"""run_experiment / format_search / CLI (C1.1, C1.2) on small corpora so they stay fast."""

import json

import jax
import pytest

from jaxparadigm.app.retrieval_task import run_experiment
from jaxparadigm.app.search_command_output import format_search
from jaxparadigm.cli import main as cli_main
from jaxparadigm.config import config_from_dict

TOPICS = ["pass", "break", "continue", "lambda", "await"]


def test_run_experiment_on_a_topic_subset(encoder, tmp_path):
    cfg = config_from_dict(
        {"name": "r", "task": "retrieval", "out_dir": str(tmp_path)},
        [f"retrieval.topics={json.dumps(TOPICS)}", "retrieval.chunk_words=60"],
    )
    before = encoder.devices
    report = run_experiment(cfg)
    assert report == tmp_path / "r" / "report.md"
    text = report.read_text(encoding="utf-8")
    assert "| semantic (passages, max) |" in text and "如何优化数据库查询性能" in text
    assert (tmp_path / "r" / "retrieval_metrics.png").stat().st_size > 1000
    m = json.loads((tmp_path / "r" / "metrics.json").read_text(encoding="utf-8"))
    assert m["n_topics"] == 5 and m["n_queries"] == 5
    for res in m["results"].values():
        assert 0 <= res["recall@1"] <= res["recall@5"] <= 1
    # on 5 very different topics the dense encoder finds every answer in the top 5
    assert m["results"]["semantic (passages, max)"]["recall@5"] == 1.0
    assert m["results"]["keyword (seed substring)"]["mrr"] == 0.0
    assert m["c1_2"]["max_abs_dot_minus_cos_normalized"] < 1e-5
    # the encoding ran on every CPU device of the process (tests force 4), said in the report
    assert m["encode_devices"] == len(jax.local_devices()) > 1
    assert f"on {m['encode_devices']} CPU devices (micro-batches in turn)" in text
    assert encoder.devices == before  # the cached encoder is left as it was


@pytest.mark.parametrize(
    "overrides, match",
    [
        (["retrieval.corpus=notes.txt"], "retrieval.corpus"),
        (['retrieval.topics=["nope"]'], "unknown topic"),
    ],
)
def test_run_experiment_config_errors(tmp_path, overrides, match):
    cfg = config_from_dict({"name": "r", "task": "retrieval", "out_dir": str(tmp_path)}, overrides)
    with pytest.raises(ValueError, match=match):
        run_experiment(cfg)


def test_format_search_on_a_file_corpus(encoder, tmp_path):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("Index design guide\nPython memory management\nSQL execution plan analysis\n")
    out = format_search("speed up slow database lookups", corpus=str(corpus), top_k=2)
    assert "keyword (seed substring):\n  (no match)" in out
    semantic = out.split("semantic (all-MiniLM-L6-v2, cosine):\n")[1].splitlines()
    assert len(semantic) == 2 and "line 2" not in semantic[0]


def test_cli_search_and_errors(encoder, tmp_path, capsys):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("the cat sat on the mat\ngradient descent\n")
    assert cli_main(["search", "a kitten", "--corpus", str(corpus), "--top-k", "1"]) == 0
    assert "1. [" in capsys.readouterr().out
    assert cli_main(["search", "x", "--corpus", str(tmp_path / "no.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(ValueError, match="top_k"):
        format_search("x", corpus=str(corpus), top_k=0)
    with pytest.raises(ValueError, match="query"):
        format_search("  ", corpus=str(corpus))
    assert cli_main(["search", "x", "--corpus", str(tmp_path)]) == 2  # a directory
    assert "not a file" in capsys.readouterr().err


@pytest.mark.slow
def test_format_search_pydoc_uses_disk_cache(encoder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    out = format_search("catch an exception and clean up", top_k=3)
    assert list((tmp_path / "jaxparadigm" / "retrieval").glob("*/manifest.json"))
    assert format_search("catch an exception and clean up", top_k=3) == out
