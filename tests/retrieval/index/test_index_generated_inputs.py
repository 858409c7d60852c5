"""Issue 24, generated inputs: the manifest loader, the JSONL/text/HTML readers and the markup
blanking get random unicode (line separators, CRLF, lone surrogates, entities) and random manifest
mutations; the contract is a result or one InputError, never another exception."""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.readable_text import html_readable, markup_boilerplate
from jaxparadigm.retrieval.documents.reading import read_documents
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.store import (
    committed,
    read_manifest,
    shard_embeddings,
    shard_passages,
)
from tests.retrieval.conftest import HashEncoder

from .test_index_reliability import KW, _text

# -- generated inputs: a result or one InputError, never another exception ----------------------


SEPARATORS = "\n\r\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"
TEXT = st.text(st.one_of(st.characters(), st.sampled_from(SEPARATORS + "<>&;#[]()-*:/ ")))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value, prefix=()):
    """Every key path into a JSON value (dicts and lists)."""
    yield prefix
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        yield from _paths(child, (*prefix, key))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, minilm_tokenizer):
    root = tmp_path_factory.mktemp("gen")
    (root / "d.txt").write_text(_text(300))
    out = root / "idx"
    build_index([root / "d.txt"], out, HashEncoder(minilm_tokenizer), **KW)
    (root / "e.txt").write_text(_text(300, seed=4))
    with pytest.raises(KeyboardInterrupt):  # an interrupted add: pending.base is exercised too
        add_to_index(out, [root / "e.txt"], HashEncoder(minilm_tokenizer, fail_after=1))
    return out, json.loads((out / "manifest.json").read_text())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_manifest_damage_is_a_result_or_one_input_error(pristine, data):
    out, good = pristine
    m = json.loads(json.dumps(good))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_paths(m))[1:]))
        *parents, last = path
        holder = m
        for key in parents:
            holder = holder[key]
        if data.draw(st.booleans()):
            del holder[last]
        else:
            holder[last] = data.draw(JSON_VALUES)
        if not isinstance(m, dict):
            break
    (out / "manifest.json").write_text(json.dumps(m))
    try:
        loaded = committed(read_manifest(out))
        for shard in loaded["shards"]:
            shard_embeddings(out, shard, loaded["model"]["dim"])
            shard_passages(out, shard)
    except InputError:
        pass
    finally:
        (out / "manifest.json").write_text(json.dumps(good))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(TEXT, min_size=1, max_size=4), crlf=st.booleans())
def test_generated_jsonl_round_trips_every_text(tmp_path, texts, crlf):
    lines = [json.dumps({"text": t}, ensure_ascii=False) for t in texts]
    path = tmp_path / "g.jsonl"
    path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode("utf-8", "surrogatepass"))
    reading = read_documents([path])  # never raises without strict=True
    if any(skip.reason == "not UTF-8" for skip in reading.skipped):  # a lone surrogate
        assert reading.documents == []
    else:
        assert [d.text for d in reading.documents] == [t for t in texts if t.strip()]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    raw=st.binary(max_size=200) | TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
    suffix=st.sampled_from([".txt", ".md", ".html", ".jsonl", ".py"]),
)
@example(raw="\u00a0\n".encode(), suffix=".jsonl")  # blank lines only: reported as empty
def test_generated_files_are_read_or_skipped_with_exact_offsets(tmp_path, raw, suffix):
    path = tmp_path / f"g{suffix}"
    path.write_bytes(raw)
    reading = read_documents([path])  # never raises: a bad file is a skipped input
    assert len(reading.documents) + len(reading.skipped) >= 1
    if suffix != ".jsonl":
        for doc in reading.documents:
            own = raw.decode("utf-8")
            assert len(doc.text) == len(own)  # blanked in place: offsets are the file's own
            assert all(c == own[i] or c == " " or suffix == ".html" for i, c in enumerate(doc.text))


@settings(max_examples=100, deadline=None)
@given(text=TEXT)
@example(text="&A; x&amp y&#x110000;<p a='&lt'>&#0;</p>")  # unknown/unterminated references
def test_generated_markup_keeps_length_and_characters(text):
    for out in (html_readable(text), markup_boilerplate(text)):
        assert len(out) == len(text)
    blanked = markup_boilerplate(text)
    assert all(c == text[i] or c == " " for i, c in enumerate(blanked))
