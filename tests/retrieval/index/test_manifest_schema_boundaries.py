"""The manifest check at every field's edge (issue 39): each field of a valid manifest, set to a
value just past its bound, of the wrong type, or with a valid prefix and a bad suffix, is refused
naming exactly that field and what was expected; a value exactly at its bound is accepted.

Enumerated: every field in the tables below with every damage, over a complete
manifest and one of an interrupted ``add`` (``status: building`` with ``pending.base``). Each case
killed one-line mutants of ``manifest_schema.py`` that the earlier tests let through (a field
named in capitals, a bound moved by one, a message changed).
"""

import copy
from pathlib import Path

import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.manifest_schema import check_manifest

PATH = Path("/idx/manifest.json")
HEX = "0123456789abcdef" * 4
SHARD = {
    "name": "shard_00000-0123456789",
    "rows": 4,
    "sha256": {"embeddings": HEX, "passages": HEX},
}
HISTORY = {
    "command": "build",
    "at": "2026-12-05T00:00:00Z",
    "paths": ["docs"],
    "passages": 6,
    "sources": 2,
    "skipped": [{"path": "x.bin", "reason": "binary", "detail": "NUL bytes"}],
}


def _complete() -> dict:
    return {
        "format": "jaxparadigm-index",
        "version": 1,
        "model": {"name": "all-MiniLM-L6-v2", "dim": 384, "max_seq_length": 256},
        "dtype": "float32",
        "shard_rows": 4,
        "count": 6,
        "status": "complete",
        "pending": None,
        "build": {"chunk_tokens": 8, "overlap": 0, "batch_size": 16},
        "sources": [{"source": "a.md", "passages": 5}, {"source": "b.md", "passages": 1}],
        "files": [{"path": "a.md", "sha256": HEX}],
        "skipped": [],
        "history": [copy.deepcopy(HISTORY)],
        "shards": [copy.deepcopy(SHARD), {**copy.deepcopy(SHARD), "rows": 2}],
        "ivf": {
            "name": "ivf-0123456789",
            "lists": 2,
            "seed": 0,
            "iters": 10,
            "train_rows": 6,
            "rows": 6,
            "seconds": 0.5,
            "sha256": {"centroids": HEX, "offsets": HEX, "ids": HEX, "rows": HEX},
        },
    }


def _building() -> dict:
    m = _complete()
    m["status"] = "building"
    m["pending"] = {
        "plan_sha256": HEX,
        "start_row": 4,
        "rows": 2,
        "base": {
            "count": 4,
            "shards": [copy.deepcopy(SHARD)],
            "sources": [{"source": "a.md", "passages": 4}],
            "files": [{"path": "a.md", "sha256": HEX}],
            "history": [copy.deepcopy(HISTORY)],
        },
    }
    return m


def _set(m: dict, path: tuple, value) -> dict:
    m = copy.deepcopy(m)
    node = m
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return m


def _name(path: tuple) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


INT = "an int >= {lo}"
RANGE = "an int in [{lo}, {hi}]"
# field path -> (lowest accepted, highest accepted or None, the expected text)
INTEGERS = {
    ("model", "dim"): (1, None, INT),
    ("model", "max_seq_length"): (1, None, INT),
    ("build", "chunk_tokens"): (2, None, INT),
    ("build", "overlap"): (0, 7, RANGE),
    ("build", "batch_size"): (1, None, INT),
    ("sources", 0, "passages"): (1, None, INT),
    ("history", 0, "passages"): (0, None, INT),
    ("history", 0, "sources"): (0, None, INT),
    ("shards", 1, "rows"): (1, 4, RANGE),
    ("ivf", "lists"): (1, None, INT),
    ("ivf", "seed"): (0, None, INT),
    ("ivf", "iters"): (0, None, INT),
    ("ivf", "train_rows"): (1, None, INT),
    ("ivf", "rows"): (0, None, INT),
}
BUILDING_INTEGERS = {
    ("pending", "start_row"): (0, 6, RANGE),
    ("pending", "rows"): (0, None, INT),
    ("pending", "base", "count"): (0, None, INT),
    ("pending", "base", "sources", 0, "passages"): (1, None, INT),
    ("pending", "base", "history", 0, "sources"): (0, None, INT),
    ("pending", "base", "shards", 0, "rows"): (1, 4, RANGE),
}
# Fields whose sum is checked after them: at a bound they are valid alone but no longer add up.
COUPLED = {
    ("sources", 0, "passages"),
    ("shards", 1, "rows"),
    ("pending", "base", "count"),
    ("pending", "base", "sources", 0, "passages"),
    ("pending", "base", "shards", 0, "rows"),
}
HEX_FIELD = "64 hex digits"
TEXTS = {
    ("model", "name"): "a string",
    ("shards", 0, "name"): "a file name shard_NNNNN-<10 hex>",
    ("shards", 0, "sha256", "embeddings"): HEX_FIELD,
    ("shards", 1, "sha256", "passages"): HEX_FIELD,
    ("files", 0, "sha256"): HEX_FIELD,
    ("files", 0, "path"): "a string",
    ("sources", 1, "source"): "a string",
    ("history", 0, "command"): "'build' or 'add'",
    ("history", 0, "at"): "a string",
    ("history", 0, "paths", 0): "a string",
    ("history", 0, "skipped", 0, "reason"): "a string",
    ("ivf", "name"): "a name ivf-<10 hex>",
    ("ivf", "sha256", "offsets"): HEX_FIELD,
}
BUILDING_TEXTS = {
    ("pending", "plan_sha256"): HEX_FIELD,
    ("pending", "base", "shards", 0, "sha256", "passages"): HEX_FIELD,
    ("pending", "base", "files", 0, "sha256"): HEX_FIELD,
    ("pending", "base", "sources", 0, "source"): "a string",
    ("pending", "base", "history", 0, "command"): "'build' or 'add'",
}
# For a patterned text: a valid prefix with one bad character after it, and a value too short.
BAD_TEXTS = {
    HEX_FIELD: [HEX[:-1] + "G", HEX + "0", HEX.upper(), HEX[:-1]],
    "a file name shard_NNNNN-<10 hex>": [
        "shard_00000-0123456789/",
        "shard_00000-012345678",
        "../shard_00000-0123456789",
        "shard_0000-0123456789",
    ],
    "'build' or 'add'": ["builds", "ad", "remove", "Build"],
    "a name ivf-<10 hex>": ["ivf-0123456789/", "ivf-012345678", "IVF-0123456789", "ivf0123456789"],
    "a string": [7, None, ["a"]],
}


def _refused(m: dict, field: str, want: str) -> None:
    with pytest.raises(InputError) as err:
        check_manifest(m, PATH)
    msg = str(err.value)
    assert msg.startswith(f"{PATH}: field {field}: got "), msg
    assert msg.endswith(
        f", expected {want}; the manifest is damaged: restore it or rebuild the index"
    )


def test_the_valid_manifests_are_accepted():
    check_manifest(_complete(), PATH)
    check_manifest(_building(), PATH)
    older = _building()
    del older["history"], older["pending"]["base"]["history"]  # before issue 35: no history
    check_manifest(older, PATH)


INTEGER_CASES = [(False, p, spec) for p, spec in INTEGERS.items()] + [
    (True, p, spec) for p, spec in BUILDING_INTEGERS.items()
]


@pytest.mark.parametrize("off", ["lo", "hi", "type"])
@pytest.mark.parametrize("case", INTEGER_CASES, ids=lambda c: _name(c[1]))
def test_integer_fields_at_and_past_each_bound(case, off):
    """Boundary: the lowest and highest accepted values pass, one past either is refused naming
    the field and its range; a bool or a float is not an int."""
    building, path, (lo, hi, want) = case
    base = _building() if building else _complete()
    want = want.format(lo=lo, hi=hi)
    if off == "type":
        for bad in (True, float(lo), str(lo)):
            _refused(_set(base, path, bad), _name(path), want)
        return
    edge = lo if off == "lo" else hi
    if edge is None:
        return
    if path not in COUPLED:  # (a coupled field at its bound no longer adds up: see below)
        check_manifest(_set(base, path, edge), PATH)  # exactly at the bound: accepted
    past = edge - 1 if off == "lo" else edge + 1
    _refused(_set(base, path, past), _name(path), want)


TEXT_CASES = [(False, p, w) for p, w in TEXTS.items()] + [
    (True, p, w) for p, w in BUILDING_TEXTS.items()
]


@pytest.mark.parametrize("case", TEXT_CASES, ids=lambda c: _name(c[1]))
def test_text_fields_with_a_valid_prefix_and_a_bad_suffix(case):
    building, path, want = case
    for bad in BAD_TEXTS[want]:
        _refused(_set(_building() if building else _complete(), path, bad), _name(path), want)


@pytest.mark.parametrize(
    "path, value, want",
    [
        (("pending",), {"plan_sha256": HEX}, None),
        (("status",), "done", "'complete' or 'building'"),
        (("dtype",), "float16", "'float32'"),
        (("sources",), {"a.md": 5}, "a list"),
        (("history",), None, "a list"),
        (("ivf", "seconds"), -0.5, "a number >= 0"),
        (("ivf", "seconds"), True, "a number >= 0"),
    ],
)
def test_structural_fields(path, value, want):
    if want is None:  # a complete manifest with a pending object
        _refused(_set(_complete(), path, value), "pending", "null when status is 'complete'")
        return
    _refused(_set(_complete(), path, value), _name(path), want)


def test_a_missing_history_in_pending_base_is_an_older_manifest_not_damage():
    m = _building()
    del m["pending"]["base"]["history"]
    check_manifest(m, PATH)
    _refused(_set(m, ("pending", "base", "shards"), "x"), "pending.base.shards", "a list")


def test_shard_rows_that_do_not_add_up_name_the_list():
    m = _set(_complete(), ("shards", 1, "rows"), 1)
    with pytest.raises(InputError, match=r"shards rows \[4, 1\] do not add up to count=6"):
        check_manifest(m, PATH)
    m = _set(_building(), ("pending", "base", "count"), 5)
    with pytest.raises(
        InputError, match=r"pending\.base\.shards rows \[4\] do not add up to count=5"
    ):
        check_manifest(m, PATH)
