"""SearchOptions: one search's options, their bounds written once (jaxparadigm.fields), read by
every door with one error naming the key as the door spells it (C1.1, C5.2)."""

from __future__ import annotations

import dataclasses

import pytest

from jaxparadigm import retrieval
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.search_options import (
    MODES,
    OPENING_FIELDS,
    SEARCH_DTYPES,
    SearchOptions,
)

CLI = {"k": "--top-k", "mode": "--mode", "approx": "--approx", "nprobe": "--nprobe"}


def test_the_defaults_are_the_clis_and_the_name_is_public():
    assert retrieval.SearchOptions is SearchOptions and "SearchOptions" in retrieval.__all__
    assert dataclasses.asdict(SearchOptions()) == {
        "mode": "hybrid",
        "k": 5,
        "nprobe": "default",
        "depth": 100,
        "approx": False,
        "excerpts": True,
        "excerpt_chars": 240,
        "dtype": "float32",
        "stream": False,
    }
    assert SearchOptions.keys() == tuple(dataclasses.asdict(SearchOptions()))
    assert MODES == ("hybrid", "dense") and SEARCH_DTYPES == ("float32", "bfloat16", "int8")
    assert OPENING_FIELDS == ("dtype", "stream")
    with pytest.raises(dataclasses.FrozenInstanceError):
        SearchOptions().k = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "values, error, message",
    [
        ({"k": 0}, ValueError, "search.k: got 0, expected an int >= 1"),
        ({"k": True}, TypeError, "search.k: got True, expected int"),
        ({"k": 2.0}, TypeError, "search.k: got 2.0, expected int"),
        ({"depth": 0}, ValueError, "search.depth: got 0, expected an int >= 1"),
        ({"excerpt_chars": -1}, ValueError, "search.excerpt_chars: got -1, expected an int >= 1"),
        (
            {"mode": "bm25"},
            ValueError,
            "search.mode: got 'bm25', expected one of 'hybrid', 'dense'",
        ),
        ({"mode": 1}, TypeError, "search.mode: got 1, expected one of 'hybrid', 'dense'"),
        ({"dtype": "f16"}, ValueError, "search.dtype: got 'f16', expected one of 'float32', "),
        ({"nprobe": 0}, ValueError, "search.nprobe: got 0, expected an int >= 1"),
        (
            {"nprobe": "all"},
            ValueError,
            "search.nprobe: got 'all', expected int or one of 'default'",
        ),
        ({"nprobe": True}, TypeError, "search.nprobe: got True, expected int or one of 'default'"),
        ({"excerpts": 1}, TypeError, "search.excerpts: got 1, expected bool"),
        ({"stream": "yes"}, TypeError, "search.stream: got 'yes', expected bool"),
        (
            {"approx": True},
            ValueError,
            "search.approx=True: approximates the dense ranking alone, but search.mode='hybrid'; "
            "expected search.mode='dense'",
        ),
        (
            {"approx": True, "mode": "dense", "nprobe": 3},
            ValueError,
            "search.approx=True: given with search.nprobe=3 (both approximate the dense ranking); "
            "expected one of them",
        ),
    ],
)
def test_a_bad_field_is_one_error_naming_it_the_value_and_what_was_expected(values, error, message):
    with pytest.raises(error) as info:
        SearchOptions(**values)
    assert str(info.value).startswith(message) and type(info.value) is error
    # a door reads the same check as one InputError (CLI: exit 2; serve: 400)
    with pytest.raises(InputError) as read:
        SearchOptions.read(values)
    assert str(read.value) == str(info.value)


def test_the_values_a_type_admits_pass():
    ok = SearchOptions(mode="dense", k=1, nprobe=None, depth=1, approx=True, excerpts=False)
    assert (ok.mode, ok.k, ok.nprobe, ok.approx) == ("dense", 1, None, True)
    assert SearchOptions(nprobe=7).nprobe == 7 and SearchOptions(dtype="int8", stream=True).stream
    assert SearchOptions(mode="dense", approx=True, nprobe="default").approx  # default: exact


def test_read_spells_each_key_as_the_door_does_and_refuses_unknown_keys():
    with pytest.raises(InputError, match=r"^--top-k: got 0, expected an int >= 1$"):
        SearchOptions.read({"k": 0}, spelled=CLI)
    with pytest.raises(InputError) as info:
        SearchOptions.read({"approx": True}, spelled=CLI)
    assert str(info.value) == (
        "--approx=True: approximates the dense ranking alone, but --mode='hybrid'; "
        "expected --mode='dense'"
    )
    with pytest.raises(InputError) as info:
        SearchOptions.read({"mode": "dense", "topk": 3}, what="body key")
    assert str(info.value) == (
        "body key 'topk': unknown; expected one of "
        + ", ".join(f"search.{f}" for f in SearchOptions.keys())
    )
    base = SearchOptions(mode="dense", k=9)
    assert SearchOptions.read({"k": 2}, base=base) == SearchOptions(mode="dense", k=2)
    assert SearchOptions.read({}) == SearchOptions()


def test_from_keywords_maps_a_functions_older_keywords_onto_the_same_type():
    defaults = {"k": 10, "nprobe": None}
    got = SearchOptions.from_keywords(None, {"k": None, "nprobe": None, "mode": "dense"}, defaults)
    assert got == SearchOptions(mode="dense", k=10, nprobe=None)  # None: the function's default
    base = SearchOptions(dtype="int8")
    assert SearchOptions.from_keywords(None, {"stream": None}, {}, base) == base  # else the base's
    with pytest.raises(InputError, match=r"^search\.k: got 0, expected an int >= 1$"):
        SearchOptions.from_keywords(None, {"k": 0}, defaults)
    given = SearchOptions(k=3)
    assert SearchOptions.from_keywords(given, {"k": None, "nprobe": None}, defaults) is given
    with pytest.raises(InputError, match=r"^nprobe: given with options; expected one of them"):
        SearchOptions.from_keywords(given, {"k": None, "nprobe": 4}, defaults)
    with pytest.raises(TypeError, match=r"^options: got dict, expected a SearchOptions$"):
        SearchOptions.from_keywords({"k": 3}, {}, defaults)  # type: ignore[arg-type]


def test_opening_fields_must_match_how_an_index_was_opened():
    opened = SearchOptions(dtype="int8", stream=True, k=50)
    assert opened.opening() == SearchOptions(dtype="int8", stream=True)
    SearchOptions(dtype="int8", stream=True, mode="dense").check_opening(opened, "idx")
    with pytest.raises(InputError) as info:
        SearchOptions().check_opening(opened, "idx", spelled={"dtype": "dtype"})
    assert str(info.value) == (
        "dtype='float32': idx was opened with dtype 'int8' (it applies to the whole index, not "
        "to one search); expected 'int8'"
    )
    with pytest.raises(InputError, match=r"^search\.stream=False: idx was opened with stream"):
        SearchOptions(dtype="int8").check_opening(opened, "idx")


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"mode": "hybrid"},
            "--mode='hybrid': the BM25 ranking of hybrid needs every passage, but in a search "
            "split over 2 processes each holds only its own shards; expected --mode='dense'",
        ),
        (
            {"nprobe": 4},
            "--nprobe=4: the IVF lists span every process's rows, and a search split over 2 "
            "processes searches exactly; expected --nprobe left out (the default)",
        ),
        (
            {"approx": True},
            "--approx=True: a search split over 2 processes merges the processes' exact top-k "
            "lists; expected --approx off",
        ),
    ],
)
def test_a_process_group_refuses_what_it_cannot_do_in_one_line(values, message):
    with pytest.raises(InputError) as info:
        SearchOptions.for_process_group(values, 2, spelled=CLI)
    assert str(info.value) == message and "\n" not in message
    explicit = SearchOptions.read({"mode": "dense", **values}) if "mode" not in values else None
    if explicit is not None:  # the same refusal from the one check, by the type's own spelling
        with pytest.raises(InputError, match="split over 2 processes"):
            explicit.check_process_group(2)


def test_a_process_group_ranks_dense_by_default_and_keeps_what_it_can_do():
    got = SearchOptions.for_process_group({"k": 7, "dtype": "bfloat16"}, 3)
    assert got == SearchOptions(mode="dense", k=7, dtype="bfloat16")
    SearchOptions(mode="dense", nprobe=None, stream=True).check_process_group(2)
