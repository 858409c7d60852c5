"""Issue 24 (14): two concurrent `index add` on one index, 20 times: one writer at a time (the
other refused with "index is locked by pid N"), no traceback, an index that verifies after each."""

import os
import subprocess
import sys

import pytest

from jaxparadigm.retrieval.index.build import build_index
from jaxparadigm.retrieval.index.store import (
    read_manifest,
    shard_embeddings,
    shard_passages,
    verify_shards,
)
from tests.retrieval.conftest import HashEncoder

from .test_index_reliability import KW, _text

# -- 14: two concurrent `index add`, 20 times ----------------------------------------------------

ADD_SCRIPT = """
import sys, time
from tokenizers import Tokenizer
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.build import add_to_index
from tests.retrieval.conftest import HashEncoder

class Slow(HashEncoder):  # a longer critical section, so the two adds overlap
    def encode(self, texts, batch_size=32, normalize=True):
        time.sleep(0.05)
        return super().encode(texts, batch_size, normalize)

tokenizer_path, index_dir, path = sys.argv[1:]
try:
    add_to_index(index_dir, [path], Slow(Tokenizer.from_file(tokenizer_path)))
except InputError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.slow
def test_two_concurrent_adds_twenty_times(tmp_path, minilm_tokenizer):
    from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

    root = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    )
    env = {**os.environ, "PYTHONPATH": root, "JAX_PLATFORMS": "cpu"}
    (tmp_path / "d.txt").write_text(_text(200))
    out = tmp_path / "idx"
    build_index([tmp_path / "d.txt"], out, HashEncoder(minilm_tokenizer), **KW)
    tok = str(minilm_path() / "tokenizer.json")
    added, refused = [], 0
    for i in range(20):
        files = [tmp_path / f"r{i}_{j}.txt" for j in (0, 1)]
        for j, f in enumerate(files):
            f.write_text(_text(60 + 10 * j, seed=2 * i + j + 1) + f" round {i} writer {j}")
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", ADD_SCRIPT, tok, str(out), str(f)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for f in files
        ]
        for f, p in zip(files, procs, strict=True):
            _, err = p.communicate(timeout=120)
            assert "Traceback" not in err, err
            if p.returncode == 0:
                added.append(os.path.realpath(f))
            else:
                assert p.returncode == 2 and "index is locked by pid" in err, err
                refused += 1
        m = read_manifest(out)  # the index verifies after each round
        assert m["status"] == "complete" and list(verify_shards(out, m))
        assert sorted(s["source"] for s in m["sources"][1:]) == sorted(added)
        for shard in m["shards"]:
            shard_embeddings(out, shard, m["model"]["dim"])
            assert len(shard_passages(out, shard)) == shard["rows"]
        assert not list(out.glob("*.tmp"))
    assert len(added) >= 20 and refused + len(added) == 40
