"""Issue 47: every file an index folder's reader opens is checked to be a regular file first (a
FIFO in place of a shard's ``.jsonl`` or an ``ivf-*.npy`` blocked ``search`` forever), and a
damaged IVF file is refused in one flat sentence. Each test failed on 9942837.

A FIFO test would hang on the old code; a watchdog thread opens the FIFO for writing after
``_WAIT`` seconds (possible only while a reader holds it open), which ends a blocked open or
read with end-of-file, and the test then fails on ``blocked``."""

import os
import threading
from pathlib import Path

import pytest

from jaxparadigm.common.bounded_reading import NotRegularFile, open_regular
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.ivf_build import train_ivf
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.store import read_manifest, shard_passages, verify_shards

from .test_index_reliability import KW, _text

_WAIT = 5.0
_SHARD = "the shard is damaged: restore the file or rebuild the index"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, minilm_tokenizer):
    from tests.retrieval.conftest import HashEncoder

    root = tmp_path_factory.mktemp("regular")
    docs = root / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"d{i}.txt").write_text(_text(50 + 7 * i, seed=i))
    build_index([docs], root / "idx", HashEncoder(minilm_tokenizer), **KW)
    train_ivf(root / "idx", 2, iters=2)
    return root / "idx"


@pytest.fixture
def index(tmp_path, pristine):
    out = tmp_path / "idx"
    out.mkdir()
    for f in pristine.iterdir():
        (out / f.name).write_bytes(f.read_bytes())
    return out


class _Watchdog:
    """Unblocks a reader stuck on ``fifo`` after ``_WAIT`` s; ``blocked`` tells if it had to."""

    def __init__(self, fifo: Path):
        self.fifo, self.blocked = fifo, False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.wait(_WAIT):
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: nobody reading
            except OSError:
                continue
            self.blocked = True
            os.close(fd)  # the reader sees end-of-file

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


def _fifo_instead(path: Path) -> Path:
    path.unlink()
    os.mkfifo(path)
    return path


def _files(index: Path) -> dict[str, tuple[Path, str]]:
    """Each kind of file the reader opens, with the words that name it in a message."""
    m = read_manifest(index)
    shard, ivf = m["shards"][1]["name"], m["ivf"]["name"]
    lists = f"{index}: IVF lists {ivf}"
    files = {
        "manifest": (index / "manifest.json", f"{index / 'manifest.json'}"),
        "shard.jsonl": (index / f"{shard}.jsonl", f"{index}: shard {shard}: {shard}.jsonl"),
        "shard.npy": (index / f"{shard}.npy", f"{index}: shard {shard}: {shard}.npy"),
    }
    for kind in ("centroids", "offsets", "ids", "rows"):
        files[f"ivf.{kind}"] = (index / f"{ivf}.{kind}.npy", f"{lists}: {ivf}.{kind}.npy")
    return files


@pytest.mark.parametrize(
    "kind",
    ["manifest", "shard.jsonl", "shard.npy", "ivf.centroids", "ivf.offsets", "ivf.ids", "ivf.rows"],
)
def test_a_fifo_in_place_of_any_index_file_is_refused_at_once_naming_it(index, kind):
    path, what = _files(index)[kind]
    _fifo_instead(path)
    with _Watchdog(path) as dog, pytest.raises(InputError) as err:
        Index(index)
    assert not dog.blocked, "the reader blocked on the FIFO"
    message = str(err.value)
    assert message.startswith(f"{what} is a FIFO, expected a regular file; the ")
    assert message.count(path.name) == 1 and "\n" not in message


@pytest.mark.parametrize("suffix", [".jsonl", ".npy"])
def test_a_fifo_shard_is_refused_by_verify_and_by_the_writers_passage_read(index, suffix):
    shard = read_manifest(index)["shards"][0]
    path = _fifo_instead(index / f"{shard['name']}{suffix}")
    expected = f"{index}: shard {shard['name']}: {path.name} is a FIFO, expected a regular file; "
    with _Watchdog(path) as dog, pytest.raises(InputError) as err:
        list(verify_shards(index, read_manifest(index)))
    assert str(err.value) == expected + _SHARD and not dog.blocked
    if suffix == ".jsonl":  # an add resuming a partial shard reads it without verifying
        with _Watchdog(path) as dog, pytest.raises(InputError) as err:
            shard_passages(index, shard, verify=False)
        assert str(err.value) == expected + _SHARD and not dog.blocked


def test_add_to_an_index_with_a_fifo_shard_is_refused_naming_it(index, tmp_path, minilm_tokenizer):
    from tests.retrieval.conftest import HashEncoder

    shard = read_manifest(index)["shards"][0]["name"]
    path = _fifo_instead(index / f"{shard}.jsonl")
    (tmp_path / "new.txt").write_text(_text(30, seed=8) + " new")
    with _Watchdog(path) as dog, pytest.raises(InputError, match=rf"{shard}\.jsonl is a FIFO"):
        add_to_index(index, [tmp_path / "new.txt"], HashEncoder(minilm_tokenizer))
    assert not dog.blocked


def test_open_regular_refuses_special_files_and_reads_a_regular_one(tmp_path):
    os.mkfifo(tmp_path / "p")
    with pytest.raises(NotRegularFile) as err:
        open_regular(tmp_path / "p")
    assert (err.value.kind, str(err.value)) == (
        "a FIFO",
        f"{tmp_path / 'p'} is a FIFO, expected a regular file",
    )
    with pytest.raises(NotRegularFile, match="is a folder, expected a regular file"):
        open_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "nothing")
    (tmp_path / "f").write_bytes(b"abc\x00")
    with open_regular(tmp_path / "f") as fh:
        assert fh.read() == b"abc\x00"


@pytest.mark.parametrize("kind", ["centroids", "offsets", "ids", "rows"])
def test_a_truncated_ivf_file_is_refused_in_one_flat_sentence(index, kind):
    ivf = read_manifest(index)["ivf"]
    path = index / f"{ivf['name']}.{kind}.npy"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    what = f"{index}: IVF lists {ivf['name']}: {path.name}"
    rerun = f"the IVF lists are damaged: rerun `jaxparadigm index ivf {index} --lists 2`"
    with pytest.raises(InputError) as err:
        Index(index)
    message = str(err.value)
    assert message.startswith(f"{what} fails its checksum (sha256 ")
    assert message.endswith(f"...); {rerun}")
    assert "unreadable" not in message and message.count("IVF lists") == 2  # name + advice
    assert message.count("(") == 1  # one parenthesis: the digests; nothing nested
    with pytest.raises(InputError) as err:  # unverified: numpy cannot parse the half file
        Index(index, verify=False)
    message = str(err.value)
    assert message.startswith(f"{what} is not a readable .npy file (")
    assert message.endswith(f"); {rerun}")
