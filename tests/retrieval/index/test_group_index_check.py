"""Issue 47: ``search``/``serve --num-processes N`` check every part of the index before any
process starts. A shard only process 1 holds that was damaged gave a 35 s gloo timeout, exit 3 and
"run the same command again" (the shard named only in process 1's temporary log); a 1-shard index
was refused only after both processes had started. Each test failed on 9942837."""

import time

import numpy as np
import pytest

from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.reader import Index, check_parts

from .test_process_search import generated, write_vectors


@pytest.fixture
def two_shards(tmp_path):
    x, _ = generated(40, 8, 0)
    return write_vectors(tmp_path / "idx", x, 20)  # process 0: shard 0, process 1: shard 1


def _damage(path):
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    path.write_bytes(bytes(data))


def test_check_parts_reads_the_passages_a_part_opens_lazily(two_shards):
    jsonl = next(two_shards.glob("shard_00001-*.jsonl"))
    _damage(jsonl)
    Index(two_shards, part=(1, 2)).close()  # opening maps the passages: not read yet
    with pytest.raises(InputError) as err:
        check_parts(two_shards, 2)
    assert str(err.value).startswith(
        f"{two_shards}: shard {jsonl.stem}: {jsonl.name} fails its checksum (sha256 "
    )
    with pytest.raises(InputError, match=f"{jsonl.name} fails its checksum"):
        check_parts(two_shards, 1)  # one process holding both shards: the same check


@pytest.mark.parametrize("command", ["search", "serve"])
@pytest.mark.parametrize("suffix", [".jsonl", ".npy"])
def test_a_damaged_shard_of_process_1_is_named_before_the_group_starts(
    two_shards, capsys, command, suffix
):
    victim = next(two_shards.glob(f"shard_00001-*{suffix}"))
    _damage(victim)
    argv = ["--index", str(two_shards), "--num-processes", "2"]
    argv = [command, *argv, *(["--", "q"] if command == "search" else ["--port", "0"])]
    t0 = time.monotonic()
    assert cli_main(argv) == 2
    assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert err.startswith(
        f"jaxparadigm {command}: error: {two_shards}: shard {victim.stem}: {victim.name} fails "
        "its checksum (sha256 "
    )
    assert len(err.strip().splitlines()) == 1 and "jax.distributed" not in err


def test_a_group_of_more_processes_than_shards_is_refused_before_it_starts(tmp_path, capsys):
    x, _ = generated(12, 8, 1)
    index = write_vectors(tmp_path / "idx", x, 20)  # one shard
    assert cli_main(["search", "--index", str(index), "--num-processes", "2", "--", "q"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"jaxparadigm search: error: {index}: 1 shard(s) of <= 20 rows, expected at least one "
        "per process (2); use fewer processes or rebuild with a smaller --shard-rows\n"
    )
    assert np.load(next(index.glob("*.npy"))).shape == (12, 8)  # nothing was written


@pytest.mark.ci_full
def test_a_group_agrees_on_a_part_that_failed_to_open_before_its_first_step(two_shards, capfd):
    """Without the launcher's check (a cluster's scheduler starts the processes): process 1's
    damaged passages file was read at its first hit, inside a step, and process 0 waited in the
    collective until gloo's timeout (35 s); now every process reads the same one line at open."""
    from jaxparadigm.train.launch import WorkerFailed

    from .test_process_search import run_group

    jsonl = next(two_shards.glob("shard_00001-*.jsonl"))
    _damage(jsonl)
    _, q = generated(40, 8, 0)
    t0 = time.monotonic()
    with pytest.raises(WorkerFailed, match=r"process [01] of 2 exited with status 1"):
        run_group(two_shards.parent, two_shards, q, 40, 1)
    assert time.monotonic() - t0 < 30
    logs = two_shards.parent / "run" / "logs"
    said = {"0": capfd.readouterr().err, "1": (logs / "process_1.log").read_text()}
    if (logs / "process_0.log").exists():  # process 0's stderr, diverted after process 1 ended
        said["0"] += (logs / "process_0.log").read_text()
    agreed = (
        f"InputError: process 1 of 2 could not open its part of the index: {two_shards}: shard "
        f"{jsonl.stem}: {jsonl.name} fails its checksum (sha256 "
    )
    assert agreed in said["0"] and agreed in said["1"]
