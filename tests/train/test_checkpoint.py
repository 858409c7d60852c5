"""Signed checkpoints: round trip, keep-last-k, tamper/config refusal, bitwise resume, SIGKILL."""

import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import chex
import jax
import numpy as np
import pytest

from jaxparadigm.build import train_from_config as train
from jaxparadigm.config import config_from_dict, to_dict
from jaxparadigm.train.checkpoint import (
    KEY_ENV_VAR,
    Checkpointer,
    CheckpointError,
    CheckpointSignatureError,
    _differences,
    signed_config,
    state_signature,
)

CFG = config_from_dict({"name": "ckpt"})
CFG_DICT = signed_config(CFG)
OTHER = config_from_dict({"name": "ckpt", "optim": {"learning_rate": 0.5}})  # another state


def _state(seed=0, step=0):
    rng = np.random.default_rng(seed)
    return {
        "step": np.asarray(step, np.int32),
        "params": {"w": rng.normal(size=(3, 4)).astype(np.float32), "b": np.zeros(4, np.float32)},
        "opt": (np.ones(3, np.float32), np.asarray(7, np.int32)),
    }


def test_signature_covers_every_bit_and_the_config():
    s = _state()
    sig = state_signature(s, CFG)
    assert sig == state_signature(_state(), CFG) and len(sig) == 64
    flipped = _state()
    flipped["params"]["w"].view(np.uint32)[1, 2] ^= 1  # one bit of one float
    assert state_signature(flipped, CFG) != sig
    assert state_signature(s, OTHER) != sig
    assert state_signature(s, config_from_dict({"name": "ckpt", "train": {"seed": 1}})) != sig
    assert state_signature(s, None) != sig
    # Run control is not signed: another name, length, cadence or resume flag signs the same.
    control = {"name": "x", "out_dir": "elsewhere", "train": {"steps": 7, "log_every": 1}}
    control["train"]["checkpoint"] = {"resume": False, "every": 3}
    assert state_signature(s, config_from_dict(control)) == sig


def test_round_trip_and_keep_last_k(tmp_path):
    ck = Checkpointer(tmp_path / "c", CFG, keep=2)
    for step in (1, 2, 3):
        ck.save(_state(seed=step, step=step))
    assert ck.all_steps() == [2, 3] and ck.latest_step() == 3
    restored = ck.restore(_state())
    chex.assert_trees_all_equal(restored, _state(seed=3, step=3))
    chex.assert_trees_all_equal(ck.restore(_state(), step=2), _state(seed=2, step=2))
    with pytest.raises(FileNotFoundError, match="step 1"):
        ck.restore(_state(), step=1)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        Checkpointer(tmp_path / "empty", CFG).restore(_state())
    with pytest.raises(ValueError, match="tree structure differs"):
        ck.restore({"only": np.zeros(1)})
    with pytest.raises(ValueError, match="keep: got 0"):
        Checkpointer(tmp_path / "c", CFG, keep=0)


def test_tampered_arrays_are_refused(tmp_path):
    good = Checkpointer(tmp_path / "good", CFG)
    good.save(_state(step=5))
    evil_state = _state(step=5)
    evil_state["params"]["w"][0, 0] += 1e-3  # someone swaps in altered weights
    evil = Checkpointer(tmp_path / "evil", CFG)
    evil.save(evil_state)
    target = Path(good.directory) / "5" / "state"
    shutil.rmtree(target)
    shutil.copytree(Path(evil.directory) / "5" / "state", target)
    with pytest.raises(CheckpointSignatureError, match="signature mismatch"):
        Checkpointer(tmp_path / "good", CFG).restore(_state())


def test_edited_signature_and_other_config_are_refused(tmp_path):
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save(_state(step=1))
    with pytest.raises(
        CheckpointSignatureError, match=r"optim.learning_rate: checkpoint 0.001, now 0.5\)"
    ):
        Checkpointer(tmp_path / "c", OTHER).restore(_state())
    meta = Path(ck.directory) / "1" / "meta" / "metadata"
    data = json.loads(meta.read_text())
    data["signature"] = "0" * 64
    meta.write_text(json.dumps(data))
    with pytest.raises(CheckpointSignatureError):
        Checkpointer(tmp_path / "c", CFG).restore(_state())


_LEAF_PATHS = ["['opt'][0]", "['opt'][1]", "['params']['b']", "['params']['w']", "['step']"]


def _message(state) -> bytes:
    """The signed message, rebuilt independently: path|dtype|shape|bytes per leaf, then config."""
    leaves = [state["opt"][0], state["opt"][1], state["params"]["b"], state["params"]["w"]]
    out = b""
    for path, leaf in zip(_LEAF_PATHS, [*leaves, state["step"]], strict=True):
        leaf = np.asarray(leaf)
        out += f"{path}|{leaf.dtype.str}|{leaf.shape}|".encode() + leaf.tobytes()
    return out + json.dumps(CFG_DICT, sort_keys=True).encode()


def _forge(good_dir: Path, evil_state, step: int, kind: str) -> None:
    """What an attacker with write access does: swap in altered arrays and store their
    recomputed *unkeyed* sha256 (computed with hashlib) as the signature, under ``kind``."""
    evil = Checkpointer(good_dir.parent / "evil_src", CFG, key=None)
    evil.save(evil_state)
    shutil.rmtree(good_dir / str(step) / "state")
    shutil.copytree(Path(evil.directory) / str(step) / "state", good_dir / str(step) / "state")
    meta = good_dir / str(step) / "meta" / "metadata"
    data = json.loads(meta.read_text())
    assert data["paths"] == _LEAF_PATHS
    data["signature"] = hashlib.sha256(_message(evil_state)).hexdigest()
    data["signature_kind"] = kind
    meta.write_text(json.dumps(data))


def test_keyed_signature_refuses_arrays_with_a_recomputed_sha256(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV_VAR, raising=False)
    evil_state = _state(step=5)
    evil_state["params"]["w"][0, 0] += 1e-3
    # Without a key the forgery is NOT detectable (documented): sha256 is integrity only.
    plain = Checkpointer(tmp_path / "plain" / "c", CFG)
    plain.save(_state(step=5))
    assert plain.signature_kind == "sha256"
    _forge(Path(plain.directory), evil_state, 5, "sha256")
    chex.assert_trees_all_equal(Checkpointer(plain.directory, CFG).restore(_state()), evil_state)
    # With a key the same forgery is refused, whichever kind the attacker writes.
    for kind, match in [("sha256", "signature kind 'sha256'"), ("hmac-sha256", "mismatch")]:
        keyed = Checkpointer(tmp_path / kind / "c", CFG, key=b"secret")
        keyed.save(_state(step=5))
        chex.assert_trees_all_equal(keyed.restore(_state()), _state(step=5))
        _forge(Path(keyed.directory), evil_state, 5, kind)
        with pytest.raises(CheckpointSignatureError, match=match):
            Checkpointer(keyed.directory, CFG, key=b"secret").restore(_state())


def test_key_kinds_env_var_and_mismatches(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV_VAR, raising=False)
    s = _state(step=2)
    keyed = state_signature(s, CFG, key="k1")
    assert keyed == state_signature(s, CFG, key=b"k1") != state_signature(s, CFG, key="k2")
    assert keyed != state_signature(s, CFG) and len(keyed) == 64
    # The keyed signature is HMAC-SHA256 over the unkeyed one's message (hmac oracle).
    msg = _message(s)
    assert keyed == hmac.new(b"k1", msg, hashlib.sha256).hexdigest()
    assert state_signature(s, CFG) == hashlib.sha256(msg).hexdigest()

    Checkpointer(tmp_path / "k", CFG, key="k1").save(s)
    meta = json.loads((tmp_path / "k" / "2" / "meta" / "metadata").read_text())
    assert (meta["signature_kind"], meta["signature"]) == ("hmac-sha256", keyed)
    with pytest.raises(CheckpointSignatureError, match="or the key differs"):
        Checkpointer(tmp_path / "k", CFG, key="k2").restore(_state())
    with pytest.raises(CheckpointSignatureError, match="signature kind 'hmac-sha256'"):
        Checkpointer(tmp_path / "k", CFG).restore(_state())
    monkeypatch.setenv(KEY_ENV_VAR, "k1")  # the env var switches to the keyed kind
    from_env = Checkpointer(tmp_path / "k", CFG)
    assert from_env.signature_kind == "hmac-sha256"
    chex.assert_trees_all_equal(from_env.restore(_state()), s)
    Checkpointer(tmp_path / "p", CFG, key=None).save(s)  # env key is used: keyed
    monkeypatch.delenv(KEY_ENV_VAR)
    with pytest.raises(CheckpointSignatureError, match="signature kind"):
        Checkpointer(tmp_path / "p", CFG).restore(_state())
    Checkpointer(tmp_path / "u", CFG).save(s)
    with pytest.raises(CheckpointSignatureError, match="signature kind 'sha256'"):
        Checkpointer(tmp_path / "u", CFG, key="k1").restore(_state())
    with pytest.raises(TypeError, match="key: got int"):
        Checkpointer(tmp_path / "x", CFG, key=3)
    with pytest.raises(ValueError, match="key: got an empty key"):
        state_signature(s, CFG, key=b"")


def test_interrupted_then_resumed_run_is_bitwise_equal(make_config, tmp_path):
    cfg = make_config(
        train={"steps": 24, "checkpoint": {"every": 8, "keep": 2}},
        data={"kind": "regression"},
        model={"num_outputs": 1},
    )
    whole = train(cfg, run_dir=tmp_path / "whole", progress=False)
    cut = train(cfg, run_dir=tmp_path / "cut", stop_at=13, progress=False)  # dies at step 13
    assert int(cut.state.step) == 13 and cut.resumed_from is None
    resumed = train(cfg, run_dir=tmp_path / "cut", progress=False)
    assert resumed.resumed_from == 8  # steps 8..12 are replayed from the checkpoint
    chex.assert_trees_all_equal(resumed.state, whole.state)  # params, opt state, RNG, counters
    assert resumed.losses == whole.losses[8:]  # same data order


_KILL_CHILD = textwrap.dedent(
    """
    import sys, numpy as np
    from jaxparadigm.train.checkpoint import Checkpointer
    ck = Checkpointer(sys.argv[1], None, keep=50)
    big = lambda s: {"step": np.asarray(s, np.int32),
                     "w": [np.full((1 << 20,), s, np.float32) for _ in range(12)]}
    ck.save(big(1))
    print("saved 1", flush=True)
    for s in range(2, 40):
        ck.save(big(s))
    """
)


def test_sigkill_during_save_leaves_last_complete_checkpoint(tmp_path):
    directory = tmp_path / "ckpt"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_CHILD, str(directory)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "saved 1"
        deadline = time.monotonic() + 60
        partial = []
        while time.monotonic() < deadline and not partial:  # wait until a save is in flight
            partial = [p for p in os.listdir(directory) if "tmp" in p]
            time.sleep(0.002)
        assert partial, "no save in progress was observed"
        proc.kill()  # SIGKILL: no cleanup, no finally blocks
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -9
    assert [p for p in os.listdir(directory) if "tmp" in p]  # the half-written save
    ck = Checkpointer(directory, None)
    steps = ck.all_steps()
    assert steps and all(str(s) in os.listdir(directory) for s in steps)
    assert not [p for p in os.listdir(directory) if not p.isdigit()]  # tmp cleaned on open
    template = {"step": np.asarray(0, np.int32), "w": [np.zeros(1 << 20, np.float32)] * 12}
    restored = ck.restore(template)
    last = steps[-1]
    assert int(restored["step"]) == last
    np.testing.assert_array_equal(restored["w"][11], np.full(1 << 20, last, np.float32))


def test_config_differences_name_every_leaf():
    """The refusal names each differing leaf by its dotted path, keys of any type, in str order."""
    stored = {"a": 1, "b": {"c": 2, "d": 3}}
    current = {"a": 1, "b": {"c": 5}, 2: "x"}
    assert _differences(stored, current) == [
        "2: checkpoint absent, now 'x'",
        "b.c: checkpoint 2, now 5",
        "b.d: checkpoint 3, now absent",
    ]
    assert _differences(current, stored)[0] == "2: checkpoint 'x', now absent"
    assert _differences(stored, stored) == []
    assert _differences(1, 2) == ["config: checkpoint 1, now 2"]
    assert _differences({"a": 1}, None) == ["config: checkpoint {'a': 1}, now None"]


def _meta_path(ck, step):
    return Path(ck.directory) / str(step) / "meta" / "metadata"


def test_kind_mismatch_messages_say_how_to_read_it(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV_VAR, raising=False)
    keyed = Checkpointer(tmp_path / "k", CFG, key="k1")
    keyed.save(_state(step=2))
    with pytest.raises(CheckpointSignatureError) as err:
        Checkpointer(keyed.directory, CFG).restore(_state())
    assert str(err.value) == (
        f"checkpoint step 2 in {keyed.directory}: signature kind 'hmac-sha256', expected "
        f"'sha256' (this checkpointer has no key); to read it, set {KEY_ENV_VAR} or pass key=. "
        "Refusing to restore."
    )
    plain = Checkpointer(tmp_path / "p", CFG)
    plain.save(_state(step=2))
    with pytest.raises(CheckpointSignatureError) as err:
        Checkpointer(plain.directory, CFG, key="k1").restore(_state())
    assert str(err.value) == (
        f"checkpoint step 2 in {plain.directory}: signature kind 'sha256', expected "
        "'hmac-sha256' (this checkpointer has a key); to read it, pass no key. "
        "Refusing to restore."
    )
    # A checkpoint written before keys existed has no signature_kind: it is sha256.
    meta = json.loads(_meta_path(plain, 2).read_text())
    del meta["signature_kind"]
    _meta_path(plain, 2).write_text(json.dumps(meta))
    chex.assert_trees_all_equal(
        Checkpointer(plain.directory, CFG).restore(_state()), _state(step=2)
    )


def test_config_refusal_names_each_difference(tmp_path):
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save(_state(step=2))
    other = config_from_dict(
        {"name": "ckpt", "optim": {"learning_rate": 0.5}, "train": {"seed": 9}}
    )
    with pytest.raises(CheckpointSignatureError) as err:
        Checkpointer(ck.directory, other).restore(_state())
    msg = str(err.value)
    assert msg.startswith(f"checkpoint step 2 in {ck.directory}: its signature covers a different")
    assert re.search(
        r"config \(optim\.learning_rate: checkpoint [^;]+, now 0\.5; train\.seed: checkpoint "
        r"\d+, now 9\)\. Refusing to restore\.$",
        msg,
    ), msg


@pytest.mark.parametrize("with_format_key", [True, False])
def test_format_1_checkpoint_signed_the_whole_config(tmp_path, with_format_key):
    """Format 1 (and checkpoints older than the format key) stored and signed the whole config:
    its signed keys are compared with the current config's, run control may differ."""
    ck = Checkpointer(tmp_path / "c", CFG)
    s = _state(step=2)
    ck.save(s)
    whole = json.loads(json.dumps(to_dict(CFG), default=str))
    whole["out_dir"] = "elsewhere"  # run control: not signed by format 2 either
    meta = json.loads(_meta_path(ck, 2).read_text())
    meta.update(config=whole, format=1, signature=state_signature(s, whole))
    if not with_format_key:
        del meta["format"]
    _meta_path(ck, 2).write_text(json.dumps(meta))
    chex.assert_trees_all_equal(Checkpointer(ck.directory, CFG).restore(_state()), s)
    with pytest.raises(CheckpointSignatureError, match="now 0.5"):
        Checkpointer(ck.directory, OTHER).restore(_state())


def test_python_scalar_leaves_restore_with_their_numpy_dtype(tmp_path):
    """A template leaf without a dtype (a Python int or float) is read as np.asarray gives it."""
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save({"step": 4, "n": 3, "x": 0.25, "w": np.ones(2, np.float32)})
    got = Checkpointer(ck.directory, CFG).restore(
        {"step": 0, "n": 0, "x": 0.0, "w": np.zeros(2, np.float32)}
    )
    assert (int(got["n"]), float(got["x"]), got["n"].dtype, got["x"].dtype) == (
        3,
        0.25,
        np.asarray(0).dtype,
        np.asarray(0.0).dtype,
    )


def test_plain_dict_config_of_format_2_is_compared_whole(tmp_path):
    """Format 2 stores signed_config as is: a plain dict keeps its unsigned extras, so a change
    in one is named as a change (not as a key absent from the checkpoint)."""
    config = {"model": 1, "data": 2, "optim": 3, "train": {"seed": 0}, "extra": 1}
    ck = Checkpointer(tmp_path / "c", config)
    ck.save(_state(step=2))
    with pytest.raises(
        CheckpointSignatureError, match=r"different config \(extra: checkpoint 1, now 2\)"
    ):
        Checkpointer(ck.directory, {**config, "extra": 2}).restore(_state())


def test_template_of_another_dtype_is_refused(tmp_path):
    """Leaves are read in the template's dtype (which is signed): a float64 template for float32
    arrays is refused, not handed back silently in the stored dtype."""
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save(_state(step=2))
    wide = _state()
    wide["params"]["w"] = wide["params"]["w"].astype(np.float64)
    with pytest.raises(CheckpointSignatureError, match="signature mismatch"):
        Checkpointer(ck.directory, CFG).restore(wide)


def test_a_template_of_shape_dtype_structs_restores(tmp_path):
    """The template may be abstract (jax.eval_shape's ShapeDtypeStructs): their own shape and
    dtype are the read targets (np.asarray of one has dtype object)."""
    ck = Checkpointer(tmp_path / "c", CFG)
    s = _state(step=2)
    ck.save(s)
    abstract = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), s)
    chex.assert_trees_all_equal(Checkpointer(ck.directory, CFG).restore(abstract), s)


def test_template_of_another_shape_is_refused(tmp_path):
    ck = Checkpointer(tmp_path / "c", CFG)
    ck.save(_state(step=2))
    narrow = _state()
    narrow["params"]["w"] = narrow["params"]["w"][:2]
    with pytest.raises(CheckpointError, match="shape"):
        Checkpointer(ck.directory, CFG).restore(narrow)


@pytest.mark.parametrize("key", [None, "k1"])
def test_signature_mismatch_message(tmp_path, monkeypatch, key):
    monkeypatch.delenv(KEY_ENV_VAR, raising=False)
    ck = Checkpointer(tmp_path / "c", CFG, key=key)
    ck.save(_state(step=2))
    meta = json.loads(_meta_path(ck, 2).read_text())
    meta["signature"] = "0123456789abcdef" * 4
    _meta_path(ck, 2).write_text(json.dumps(meta))
    with pytest.raises(CheckpointSignatureError) as err:
        Checkpointer(ck.directory, CFG, key=key).restore(_state())
    computed = state_signature(_state(step=2), CFG, key=key)
    assert str(err.value) == (
        f"checkpoint step 2 in {ck.directory}: signature mismatch (stored 0123456789abcdef..., "
        f"computed {computed[:16]}...); the arrays or the stored config were altered"
        + (" or the key differs" if key else "")
        + ". Refusing to restore."
    )


def test_keep_refuses_bools_and_non_integers(tmp_path):
    for keep in (True, 2.5, "3"):
        with pytest.raises(
            ValueError, match=rf"keep: got {re.escape(repr(keep))}, expected an int"
        ):
            Checkpointer(tmp_path / "c", CFG, keep=keep)


def test_a_plain_config_with_non_json_values_is_signed_by_their_text(tmp_path):
    """A dict config may hold values JSON has no type for (a Path, a NumPy scalar): they are
    signed by their str(), so such a run saves, and a restart with the same config resumes."""
    config = {"data": Path("corpus/pydoc"), "lr": np.float32(0.25)}
    ck = Checkpointer(tmp_path / "c", config)
    assert ck.config is config
    ck.save(_state(step=1))
    again = Checkpointer(tmp_path / "c", {"data": Path("corpus/pydoc"), "lr": np.float32(0.25)})
    chex.assert_trees_all_equal(again.restore(_state()), _state(step=1))
    with pytest.raises(CheckpointError, match="config"):
        Checkpointer(tmp_path / "c", {"data": Path("other"), "lr": np.float32(0.25)}).restore(
            _state()
        )


def test_a_stray_file_named_like_an_orbax_temporary_does_not_block_opening(tmp_path):
    """Leftover orbax temporaries are deleted on open; a *file* with such a name (not a step
    directory) cannot be removed by rmtree and is left alone instead of failing the run."""
    directory = tmp_path / "c"
    directory.mkdir()
    (directory / "7.orbax-checkpoint-tmp-123").write_text("not a step")
    (directory / "8.orbax-checkpoint-tmp-456").mkdir()
    ck = Checkpointer(directory, CFG)
    assert not (directory / "8.orbax-checkpoint-tmp-456").exists()
    ck.save(_state(step=1))
    assert ck.all_steps() == [1]


def test_restore_returns_leaves_of_the_templates_kind(tmp_path):
    """NumPy template leaves come back as NumPy arrays (on the host), jax.Array leaves as
    jax.Arrays."""
    ck = Checkpointer(tmp_path / "c", CFG)
    state = {"step": 1, "w": np.arange(4, dtype=np.float32), "v": jax.numpy.ones(3)}
    ck.save(state)
    got = ck.restore({"step": 0, "w": np.zeros(4, np.float32), "v": jax.numpy.zeros(3)})
    assert isinstance(got["w"], np.ndarray) and not isinstance(got["w"], jax.Array)
    assert isinstance(got["v"], jax.Array)
    chex.assert_trees_all_equal({k: got[k] for k in "wv"}, {k: state[k] for k in "wv"})
