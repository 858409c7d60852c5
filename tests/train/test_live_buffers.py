"""The live-buffer count (C4.1): a sharded array's shards counted once per device whatever views of
them exist, a copy counted and listed, the sampler's hook firing at returns of the named code."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxparadigm.train.live_buffers import LiveBufferSampler, live_sample


def _mesh():
    if jax.device_count() < 4:
        pytest.skip(f"needs 4 devices, this process has {jax.device_count()}")
    return Mesh(np.array(jax.devices()[:4]), ("d",))


def _made_here(tag: str) -> jax.Array:
    """A function of this test module (the sampler's hook is pointed at it)."""
    return jnp.full((64, 64), 1.0) + len(tag)


def _fake(device_ids: list[int], pointer: int, nbytes: int, shape=(8,)) -> SimpleNamespace:
    """An array-like of one buffer address on each of ``device_ids`` (what a CPU device_put of one
    aligned NumPy array can give: every device's buffer aliases the host's)."""
    devices = [SimpleNamespace(id=i) for i in device_ids]
    data = SimpleNamespace(unsafe_buffer_pointer=lambda: pointer, nbytes=nbytes)
    return SimpleNamespace(
        is_deleted=lambda: False,
        sharding=SimpleNamespace(device_set=devices),
        addressable_shards=[SimpleNamespace(device=d, data=data) for d in devices],
        unsafe_buffer_pointer=lambda: pointer,
        nbytes=nbytes,
        shape=shape,
        dtype="float32",
    )


def test_one_address_on_several_devices_is_held_by_each(monkeypatch):
    # a replicated array whose 3 device buffers share one address, and device 1's own view of it
    arrays = [_fake([0, 1, 2], 4096, 1024), _fake([1], 4096, 1024), _fake([2], 8192, 2048)]
    monkeypatch.setattr(jax, "live_arrays", lambda: arrays)
    got = live_sample(min_copy_bytes=1)
    assert got.per_device == {0: 1024, 1: 1024, 2: 1024 + 2048}
    assert got.copies == [(2, (8,), "float32")]  # the view on device 1 is no copy


def test_views_are_counted_once_and_a_copy_is_listed():
    mesh = _mesh()
    base = live_sample()
    split = jax.device_put(np.ones((64, 32), np.float32), NamedSharding(mesh, P("d")))
    whole = jax.device_put(np.ones((16, 16), np.float32), NamedSharding(mesh, P()))
    views = [s.data for s in split.addressable_shards] + [whole.addressable_data(0)]
    np.asarray(jax.device_get(whole))  # a host read: more views of the same buffers
    after = live_sample()
    grew = {d: after.per_device.get(d, 0) - base.per_device.get(d, 0) for d in after.per_device}
    for d in mesh.devices.flat:  # each device: its 16x32 shard + the replicated 16x16, once
        assert grew[d.id] == 16 * 32 * 4 + 16 * 16 * 4, (d.id, grew)
    assert after.copies == base.copies  # views are no copies
    second = mesh.devices.flat[1]
    copy = jax.device_put(np.zeros((32, 32), np.float32), second)
    with_copy = live_sample(min_copy_bytes=1024)
    assert (second.id, (32, 32), "float32") in with_copy.copies
    assert with_copy.per_device[second.id] - after.per_device[second.id] == 32 * 32 * 4
    small = live_sample(min_copy_bytes=32 * 32 * 4 + 1)
    assert (second.id, (32, 32), "float32") not in small.copies
    del views, copy


def test_the_sampler_takes_a_sample_at_each_return_of_the_named_code():
    _mesh()
    with LiveBufferSampler(packages=(f"{__name__}:_made_here",)) as sampler:
        kept = [_made_here(str(i)) for i in range(3)]
        jnp.ones(3)  # not a function of this module: no sample
    assert sampler.samples == 3
    assert sampler.places == {f"{__name__}._made_here": 3}
    assert sampler.busiest.busiest >= 3 * 64 * 64 * 4  # the third sample sees all three
    device = kept[0].sharding.device_set.pop().id
    assert sampler.peak[device] >= 3 * 64 * 64 * 4
    with pytest.raises(ValueError, match=r"^interval_s: got 0, expected seconds > 0$"):
        LiveBufferSampler(interval_s=0)
    with pytest.raises(ValueError, match=r"^interval_s: got nan, expected seconds > 0$"):
        LiveBufferSampler(interval_s=float("nan"))
    with pytest.raises(ValueError, match=r"^min_copy_bytes: got -1, expected an int >= 0$"):
        LiveBufferSampler(min_copy_bytes=-1)
    with pytest.raises(TypeError, match="packages: got 'jaxparadigm'"):
        LiveBufferSampler(packages="jaxparadigm")  # type: ignore[arg-type]
