"""Datasets without downloads, deterministic batching, and the data checks (C5.1).

* ``two_spirals`` / ``noisy_regression``: synthetic sets from a seeded numpy generator.
* ``pydoc_bytes``: the byte-level corpus of Python's shipped ``pydoc_data.topics`` (UTF-8 bytes,
  vocabulary 256), split train/validation by topic with a seeded shuffle.
* Batching is *stateless*: the batch for step ``k`` is a pure function of ``(seed, k)`` (epoch
  ``e = k // steps_per_epoch`` uses permutation ``rng(seed, e)``), so a resumed run sees exactly the
  data order of an uninterrupted one.
* Per process (C5.2): with ``shard=(p, P)`` a process loads only rows ``[p B/P, (p+1) B/P)`` of
  the global batch ``B`` of step ``k``, a pure function of ``(seed, k, p)``: the ``P`` processes
  together see exactly the one-process batch, whatever ``P`` is, and a resumed multi-process run
  sees the same data order.
* ``validate_batch`` (schema check) and ``drift_report`` (PSI/KS) are re-exported from
  :mod:`jaxparadigm.train.validation` and :mod:`jaxparadigm.train.drift`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

import numpy as np

from jaxparadigm.common.numbers import check_float, check_int
from jaxparadigm.fields import Bounds, NonNegative, Seed, check_fields
from jaxparadigm.train.drift import DriftReport, drift_report
from jaxparadigm.train.validation import validate_batch

__all__ = [
    "DataSplit",
    "DriftReport",
    "Dataset",
    "array_batch",
    "build_dataset",
    "drift_report",
    "noisy_regression",
    "pydoc_bytes",
    "token_batch",
    "two_spirals",
    "validate_batch",
]


def two_spirals(n: int, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals: ``x [n, 2] float32``, ``y [n] int32`` in {0, 1} (C5.1).

    Class ``c`` point at angle ``t ~ U(0, 3pi)``: ``r = t / 3pi``,
    ``x = (-1)^c r (cos t, sin t) + noise * N(0, 1)``.
    """
    n = check_int("n", n, 2, error=ValueError)
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    t = rng.uniform(0.0, 3 * np.pi, size=n)
    r = t / (3 * np.pi)
    sign = np.where(y == 0, 1.0, -1.0)
    x = np.stack([sign * r * np.cos(t), sign * r * np.sin(t)], axis=1)
    x = x + noise * rng.standard_normal(x.shape)
    return x.astype(np.float32), y.astype(np.int32)


def noisy_regression(
    n: int, features: int = 4, noise: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``y = sin(x w) + noise * N(0, 1)`` with ``x ~ N(0, I)``, ``w`` fixed by the seed (C5.1).

    Returns ``x [n, features] float32`` and ``y [n, 1] float32``.
    """
    n = check_int("n", n, 2, error=ValueError)
    features = check_int("features", features, 1, error=ValueError)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((features, 1)) / np.sqrt(features)
    x = rng.standard_normal((n, features))
    y = np.sin(x @ w) + noise * rng.standard_normal((n, 1))
    return x.astype(np.float32), y.astype(np.float32)


def pydoc_bytes(val_fraction: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Train/validation byte streams (``uint8``) of ``pydoc_data.topics`` (C5.1).

    Topics are sorted by name, shuffled with ``default_rng(seed)``, and the last
    ``ceil(val_fraction * topics)`` go to validation; each stream is the topics' UTF-8 text joined
    with blank lines.
    """
    val_fraction = check_float(
        "val_fraction", val_fraction, 0, 1, lo_open=True, hi_open=True, error=ValueError
    )
    from pydoc_data.topics import topics

    names = sorted(topics)
    order = np.random.default_rng(seed).permutation(len(names))
    n_val = max(1, int(np.ceil(val_fraction * len(names))))
    pick = [names[i] for i in order]

    def stream(keys):
        text = "\n\n".join(topics[k] for k in keys).encode("utf-8")
        return np.frombuffer(text, dtype=np.uint8).copy()

    return stream(pick[:-n_val]), stream(pick[-n_val:])


def _check_shard(shard, batch_size: int) -> tuple[int, int]:
    """``(index, count)`` with ``0 <= index < count`` and ``count`` dividing ``batch_size``."""
    ok = isinstance(shard, tuple) and len(shard) == 2
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) for v in shard)
    if not ok or not 0 <= shard[0] < shard[1]:
        raise ValueError(f"shard: got {shard!r}, expected (index, count) with 0 <= index < count")
    if batch_size % shard[1]:
        raise ValueError(
            f"batch_size: got {batch_size}, expected a multiple of the {shard[1]} processes "
            "(each loads batch_size / processes rows)"
        )
    return shard


def _local_rows(rows: np.ndarray, shard: tuple[int, int]) -> np.ndarray:
    """Process ``p``'s block ``rows[p B/P : (p+1) B/P]`` of a global batch's rows."""
    index, count = shard
    per = rows.shape[0] // count
    return rows[index * per : (index + 1) * per]


def array_batch(
    x: np.ndarray,
    y: np.ndarray,
    step: int,
    batch_size: int,
    seed: int,
    shard: tuple[int, int] = (0, 1),
) -> dict[str, np.ndarray]:
    """Batch ``step`` of seeded epoch permutations: epoch ``step // (n // batch_size)`` (C5.1).

    Pure in ``(step, seed)``: the same step always gives the same rows. With ``shard=(p, P)`` only
    process ``p``'s ``batch_size / P`` rows of that global batch are loaded (C5.2).
    """
    shard = _check_shard(shard, batch_size)
    n = x.shape[0]
    per_epoch = n // batch_size
    if per_epoch < 1:
        raise ValueError(f"batch_size: got {batch_size}, expected <= dataset size {n}")
    epoch, i = divmod(int(step), per_epoch)
    perm = np.random.default_rng([seed, epoch]).permutation(n)
    rows = _local_rows(perm[i * batch_size : (i + 1) * batch_size], shard)
    return {"x": x[rows], "y": y[rows]}


def token_batch(
    stream: np.ndarray,
    step: int,
    batch_size: int,
    seq_len: int,
    seed: int,
    shard: tuple[int, int] = (0, 1),
) -> dict[str, np.ndarray]:
    """``{"tokens": int32 [batch_size, seq_len + 1]}`` windows at offsets from ``rng(seed, step)``.

    Serves C5.1. Inputs are ``tokens[:, :-1]``, next-byte targets ``tokens[:, 1:]``. With
    ``shard=(p, P)`` only process ``p``'s ``batch_size / P`` windows are read (C5.2).
    """
    shard = _check_shard(shard, batch_size)
    if stream.size < seq_len + 2:
        raise ValueError(f"seq_len: got {seq_len}, expected < stream length {stream.size} - 1")
    starts = np.random.default_rng([seed, int(step)]).integers(
        0, stream.size - seq_len - 1, size=batch_size
    )
    starts = _local_rows(starts, shard)
    idx = starts[:, None] + np.arange(seq_len + 1)[None, :]
    return {"tokens": stream[idx].astype(np.int32)}


class DataSplit(NamedTuple):
    """Arrays (or a byte stream) of one split."""

    x: np.ndarray
    y: np.ndarray | None


class Dataset(NamedTuple):
    """What the train loop needs: ``batch(step)``, fixed ``val_batches``, the ``schema`` (C5.1).

    ``shard = (p, P)``: batches and validation batches hold process ``p``'s rows of each global
    batch (the schema's leading dimension is ``batch_size / P``)."""

    kind: str
    batch: Callable[[int], dict]
    val_batches: list
    schema: dict
    in_features: int
    num_outputs: int
    train: DataSplit
    val: DataSplit
    shard: tuple[int, int] = (0, 1)


@dataclass(frozen=True)
class DataSettings:
    """Data source (the config's ``data``): synthetic sets or the byte-level
    ``pydoc_data.topics`` corpus (no downloads), the global batch size and the split (C5.1)."""

    PATH: ClassVar[str] = "data"

    kind: Literal["spirals", "regression", "pydoc_chars"] = "spirals"
    n_samples: Annotated[int, Bounds(ge=2)] = 2048
    noise: NonNegative = 0.1
    seq_len: Annotated[int, Bounds(ge=1, le=4096)] = 64
    batch_size: Annotated[int, Bounds(ge=1)] = 64
    val_fraction: Annotated[float, Bounds(gt=0.0, lt=1.0)] = 0.1
    seed: Seed = 0

    def __post_init__(self) -> None:
        check_fields(self)


DataSpec = DataSettings  # the former name of what build_dataset reads


def build_dataset(
    data_cfg: DataSettings, val_batches: int = 4, shard: tuple[int, int] = (0, 1)
) -> Dataset:
    """The :class:`Dataset` of a ``DataConfig`` (``spirals``, ``regression``, ``pydoc_chars``).

    Serves C5.1. Validation batches are fixed (computed once) so evaluations are comparable.
    ``shard=(p, P)``: this process's rows of every global batch (C5.2).
    """
    c = data_cfg
    check_int("data.batch_size", c.batch_size, 1, error=ValueError)
    shard = _check_shard(shard, c.batch_size)
    local = c.batch_size // shard[1]
    if c.kind == "pydoc_chars":
        train, val = pydoc_bytes(c.val_fraction, c.seed)
        schema = {"tokens": ((local, c.seq_len + 1), np.int32, (0, 255))}
        vb = [
            token_batch(val, 10**6 + i, c.batch_size, c.seq_len, c.seed, shard)
            for i in range(val_batches)
        ]
        return Dataset(
            kind=c.kind,
            batch=lambda step: token_batch(train, step, c.batch_size, c.seq_len, c.seed, shard),
            val_batches=vb,
            schema=schema,
            in_features=c.seq_len,
            num_outputs=256,
            train=DataSplit(train, None),
            val=DataSplit(val, None),
            shard=shard,
        )
    if c.kind == "spirals":
        x, y = two_spirals(c.n_samples, c.noise, c.seed)
        y_spec: tuple[Any, ...] = ((local,), np.int32, (0, 1))
        num_outputs = 2
    elif c.kind == "regression":
        x, y = noisy_regression(c.n_samples, noise=c.noise, seed=c.seed)
        y_spec = ((local, 1), np.float32)
        num_outputs = 1
    else:  # the config loader only admits the kinds above
        raise ValueError(f"data.kind: got {c.kind!r}, expected spirals, regression or pydoc_chars")
    n_val = max(c.batch_size, int(round(c.val_fraction * x.shape[0])))
    if n_val >= x.shape[0]:
        raise ValueError(f"data.n_samples: got {x.shape[0]}, too few for val and a batch")
    xt, yt, xv, yv = x[:-n_val], y[:-n_val], x[-n_val:], y[-n_val:]
    vb = [
        {"x": xv[rows], "y": yv[rows]}
        for i in range(0, n_val - c.batch_size + 1, c.batch_size)
        for rows in [_local_rows(np.arange(i, i + c.batch_size), shard)]
    ][:val_batches]
    return Dataset(
        kind=c.kind,
        batch=lambda step: array_batch(xt, yt, step, c.batch_size, c.seed, shard),
        val_batches=vb,
        schema={"x": ((local, x.shape[1]), np.float32), "y": y_spec},
        in_features=x.shape[1],
        num_outputs=num_outputs,
        train=DataSplit(xt, yt),
        val=DataSplit(xv, yv),
        shard=shard,
    )
