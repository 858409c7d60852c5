"""Generated aliasing programs on ``Memory``/``View`` vs NumPy and PyTorch (issue 23, 3a).

Programs come from ``tests/tensor/view_chain_strategies.py``: movement ops (``narrow``,
``unsqueeze`` and the rest), overlapping ``as_strided`` windows, ``set_`` onto another tensor's
storage or onto new values, and writes (``fill_``, ``add_``, ``copy_``, ``setitem_`` with ``None``,
``...`` and advanced parts, ``copy_`` from another alias) interleaved over several tensors. After
every step, for every tensor: its values, which storage it views, and (vs PyTorch) shape, strides,
storage offset and ``is_contiguous``; (vs NumPy) the storage index of every element, from NumPy's
own addresses; and every storage's contents, so a write is seen by exactly the aliases that share
the written elements. A refusal must meet a refusal (the program then goes on), and a refused step
leaves the state unchanged (PyTorch leaves a tensor whose ``set_`` it refused half rebound, reading
past its storage, and an ``index_put_`` it refused for an out-of-bounds index partly written; its
interpreter restores both). PyTorch storages come from NumPy, so they
are fixed-size as ours: PyTorch's ``set_`` may not grow them either.

Classes as in ``tests/differential_classes.py``. Documented refusals (counted by name):

* ``overlapping_write``: ``copy_``/``add_``/``setitem_`` through a view in which two written
  elements share one storage element, when its strides are not zero (a zero stride PyTorch
  refuses too). PyTorch (its overlap check gives up: ``MemOverlap::TooHard``) and NumPy write
  element after element, so the result depends on the kernel's order (``torch.as_strided`` docs:
  in-place ops on such views "may result in incorrect behavior"); we refuse all of them.
  ``fill_`` is defined (one value) and is compared.
* ``advanced_index_into_overlapping_view``: an advanced ``setitem_`` index into a view that has
  overlapping elements (PyTorch writes and warns that ``index_put_`` on expanded tensors is
  deprecated).
* ``set_reinterprets_dtype``: ``set_(source, offset, shape, strides)`` with a ``source`` of another
  dtype. PyTorch goes through the source's untyped storage and reads its bytes as the tensor's
  dtype (an int32 ``-7`` becomes a float32 NaN; it refuses the dtype only without a geometry);
  our storages are typed arrays, and ``set_`` refuses every dtype change with a ``TypeError``.
* ``set_kept_strides_past_the_storage``: ``set_(source, offset, shape)`` without strides, with
  ``shape`` the tensor's own: PyTorch checks the row-major layout against the storage, then keeps
  the tensor's strides (its resize returns early for an unchanged size) even where they address
  past the storage's end, and reads there (``a[::2].set_(torch.zeros(3), 0, (3,))`` reads a third
  element from beyond the 3-element storage); we raise ``ValueError``.
* ``negative_expand_size``: as in ``test_generated_view_chains.py``.

Counted apart, never failing: ``not_judged:empty_view_offset``, a step whose NumPy model would need
the storage offset of an empty view (``as_strided`` with offset ``None``, or ``set_`` with a
geometry, from an empty tensor). NumPy does not place empty views (``a[7:1]`` starts at ``a[0]``),
so the program's NumPy comparison ends there; PyTorch places them and judges the same programs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given

from jaxparadigm.tensor import Memory, View
from tests.differential_classes import (
    EQUAL,
    RAISED,
    SILENT,
    Tally,
    default_settings,
    long_settings,
)
from tests.tensor.test_generated_view_chains import apply_ours, apply_torch, write_ours
from tests.tensor.view_chain_strategies import (
    REFUSALS,
    NotJudged,
    NumpyProgram,
    alias_programs,
    indexed,
    initial_storages,
)


class OursProgram:
    """Our interpreter: one ``Memory``, a list of ``Handle``s."""

    def __init__(self, sizes, shape, offset) -> None:
        storages = initial_storages(sizes)
        mem, whole = Memory().tensor(storages[0])
        self.mem, second = mem.tensor(storages[1])
        self.handles = [self.mem.as_strided(whole, shape, View.contiguous(shape).strides, offset)]
        self.handles.append(second)

    def step(self, step: tuple) -> None:
        kind, *args = step
        if kind == "move":
            src, op = args
            h = self.handles[src]
            if op[0] == "view":
                self.handles.append(self.mem.view(h, *op[1]))
            else:
                self.handles.append(dataclasses.replace(h, view=apply_ours(h.view, op)))
        elif kind == "as_strided":
            src, shape, strides, offset = args
            extra = () if offset is None else (offset,)
            self.handles.append(self.mem.as_strided(self.handles[src], shape, strides, *extra))
        elif kind == "set_":
            dst, source, geometry = args
            source = self.handles[source] if isinstance(source, int) else source
            self.mem, self.handles[dst] = self.mem.set_(
                self.handles[dst], source, *(geometry or ())
            )
        elif kind == "write":
            dst, write = args
            self.mem = write_ours(self.mem, self.handles[dst], write)
        else:
            dst, src = args
            self.mem = self.mem.copy_(self.handles[dst], self.mem.read(self.handles[src]))

    def values(self, i: int) -> np.ndarray:
        return np.asarray(self.mem.read(self.handles[i]))

    def storages(self) -> list[np.ndarray]:
        return [np.asarray(s) for s in self.mem.storages]


class TorchProgram:
    """PyTorch: fixed-size storages from NumPy, tensors over them, ``set_`` in place."""

    def __init__(self, sizes, shape, offset) -> None:
        import torch

        self.torch = torch
        self.bases = [torch.from_numpy(s) for s in initial_storages(sizes)]
        strides = View.contiguous(shape).strides
        self.tensors = [torch.as_strided(self.bases[0], shape, strides, offset)]
        self.tensors.append(torch.as_strided(self.bases[1], (sizes[1],), (1,), 0))

    def step(self, step: tuple) -> None:
        torch = self.torch
        kind, *args = step
        if kind == "move":
            src, op = args
            self.tensors.append(apply_torch(self.tensors[src], op))
        elif kind == "as_strided":
            src, shape, strides, offset = args
            extra = () if offset is None else (offset,)
            self.tensors.append(torch.as_strided(self.tensors[src], shape, strides, *extra))
        elif kind == "set_":
            self._set(*args)
        else:  # a write: PyTorch may write part of an index_put_ it then refuses (an index out
            saved = [b.clone() for b in self.bases]  # of bounds after valid ones); restore it
            try:
                self._write(kind, args)
            except torch_refusals(torch):
                for base, before in zip(self.bases, saved, strict=True):
                    base.copy_(before)
                raise

    def _write(self, kind: str, args) -> None:
        torch = self.torch
        if kind == "write":
            dst, (what, index, values) = args
            t = self.tensors[dst]
            if what == "fill_":
                t.fill_(float(values))
            elif what == "setitem_":
                t[torch_index(index)] = torch.from_numpy(np.array(values))
            else:
                getattr(t, what)(torch.from_numpy(np.array(values)))
        else:
            dst, src = args
            self.tensors[dst].copy_(self.tensors[src].clone())

    def _set(self, dst: int, source, geometry) -> None:
        t = self.tensors[dst]
        keep = self.torch.as_strided(t, t.shape, t.stride(), t.storage_offset())
        new, src = None, self.tensors[source] if isinstance(source, int) else None
        if src is None:  # torch.tensor(values.tolist()), but over a fixed-size storage
            new = self.torch.from_numpy(source.reshape(-1).copy())
            rowmajor = self.torch.empty(source.shape).stride()  # (from_numpy gives an empty 0s)
            src = self.torch.as_strided(new, source.shape, rowmajor, 0)
        try:
            if geometry is None:
                t.set_(src)
            else:
                offset, shape, strides = geometry
                t.set_(src, offset, shape, *(() if strides is None else (strides,)))
        except torch_refusals(self.torch):
            self.tensors[dst] = keep
            raise
        if new is not None:
            self.bases.append(new)

    def storage_index(self, i: int) -> int:
        cdata = self.tensors[i].untyped_storage()._cdata
        return [b.untyped_storage()._cdata for b in self.bases].index(cdata)

    def positions(self, i: int):
        t = self.tensors[i]
        size = self.bases[self.storage_index(i)].numel()
        whole = self.torch.arange(max(size, 1))
        return self.torch.as_strided(whole, t.shape, t.stride(), t.storage_offset())


def torch_index(index: tuple) -> tuple:
    import torch

    return tuple(torch.from_numpy(p) if isinstance(p, np.ndarray) else p for p in index)


def torch_refusals(torch) -> tuple:
    return (RuntimeError, IndexError, ValueError, TypeError) + (
        (torch.OpError,) if hasattr(torch, "OpError") else ()
    )


# --- comparisons --------------------------------------------------------------------------------


def _meta(h) -> tuple:
    v = h.view
    return v.shape, v.strides, v.offset, v.is_contiguous(), h.storage


def compare_with_torch(ours: OursProgram, theirs: TorchProgram, tally: Tally, where: str) -> None:
    for i, (h, t) in enumerate(zip(ours.handles, theirs.tensors, strict=True)):
        want = (tuple(t.shape), t.stride(), t.storage_offset(), t.is_contiguous())
        want = want + (theirs.storage_index(i),)
        same = _meta(h) == want and np.array_equal(ours.values(i), t.numpy())
        tally.record(EQUAL if same else SILENT, f"{where}: t{i}: {_meta(h)} vs {want}")
    _compare_storages(ours.storages(), [b.numpy() for b in theirs.bases], tally, where)


def compare_with_numpy(ours: OursProgram, model: NumpyProgram, tally: Tally, where: str) -> None:
    for i, (h, (array, b)) in enumerate(zip(ours.handles, model.tensors, strict=True)):
        same = h.shape == array.shape and h.storage == b
        if same and array.size:
            same = np.array_equal(h.view.storage_indices(), model.positions(i))
        same = same and np.array_equal(ours.values(i), array)
        tally.record(EQUAL if same else SILENT, f"{where}: t{i}: {_meta(h)} vs {array.shape}")
    _compare_storages(ours.storages(), model.buffers, tally, where)


def _compare_storages(got: list, want: list, tally: Tally, where: str) -> None:
    same = len(got) == len(want) and all(map(np.array_equal, got, want))
    tally.record(EQUAL if same else SILENT, f"{where}: storages {got} vs {want}")


def _repeats(positions) -> bool:
    flat = np.asarray(positions).reshape(-1)
    return np.unique(flat).size != flat.size


def documented_refusal(step: tuple, err: Exception, positions) -> str | None:
    """The name of the documented refusal ``err`` is, given the oracle's storage positions of the
    written tensor (``None`` if the step writes nothing)."""
    kind, *args = step
    message = str(err)
    if kind == "set_" and "cannot set a tensor of dtype" in message:
        return "set_reinterprets_dtype"
    if kind == "set_" and "torch reads past the storage's end" in message:
        return "set_kept_strides_past_the_storage"
    if positions is None or kind not in ("write", "copy_from"):
        return None
    what, index = (args[1][0], args[1][1]) if kind == "write" else ("copy_", None)
    if "advanced index into an overlapping view" in message and _repeats(positions):
        return "advanced_index_into_overlapping_view"
    if what != "fill_" and "refers to a single storage element" in message:
        written = positions if index is None else indexed(positions, index)
        if _repeats(written):
            return "overlapping_write"
    return None


def run_program(program: tuple, oracle, tally: Tally) -> None:
    sizes, shape, offset, steps = program
    ours, theirs = OursProgram(sizes, shape, offset), oracle(sizes, shape, offset)
    compare = compare_with_torch if isinstance(theirs, TorchProgram) else compare_with_numpy
    refusals = REFUSALS + (torch_refusals(theirs.torch) if isinstance(theirs, TorchProgram) else ())
    compare(ours, theirs, tally, f"{program}: start")
    for n, step in enumerate(steps):
        where = f"{program}: step {n} {step}"
        dst = step[1] if step[0] in ("write", "copy_from") else None
        positions = None if dst is None else np.asarray(theirs.positions(dst))
        try:
            ours.step(step)
            our_err = None
        except REFUSALS as err:
            our_err = err
        try:
            theirs.step(step)
            their_err = None
        except refusals as err:
            their_err = err
        except NotJudged:
            tally.record("not_judged:empty_view_offset")
            return
        if our_err is not None and their_err is None:
            name = documented_refusal(step, our_err, positions)
            if name is None and step[0] == "move" and min(theirs.tensors[-1].shape, default=0) < 0:
                name = "negative_expand_size"
            if name is not None:
                tally.refused(name)
            else:
                tally.record(RAISED, f"{where}: ours {our_err!r}")
            return  # the states differ from here on
        if their_err is not None and our_err is None:
            tally.record(SILENT, f"{where}: ours answered, the oracle refused: {their_err!r}")
            return
        if our_err is not None:
            tally.record(EQUAL)
        compare(ours, theirs, tally, where)
        if our_err is not None and step[0] in ("move", "as_strided"):
            return  # both refused to make the tensor that the later steps were drawn to use


# --- suites -------------------------------------------------------------------------------------


def _run(oracle, name: str, profile) -> None:
    tally = Tally(name)

    @profile
    @given(program=alias_programs())
    def run(program):
        tally.example()
        run_program(program, oracle, tally)

    run()
    tally.finish()


def test_generated_alias_programs_match_numpy():
    _run(NumpyProgram, "alias programs vs numpy", default_settings(50))


@pytest.mark.slow
def test_generated_alias_programs_match_numpy_long():
    _run(NumpyProgram, "alias programs vs numpy", long_settings(1_000))


def _torch_run(profile) -> None:
    torch = pytest.importorskip("torch")
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # a repeated index_put_ position: the last one wins
    try:
        _run(TorchProgram, "alias programs vs torch", profile)
    finally:
        torch.use_deterministic_algorithms(deterministic)


@pytest.mark.crosscheck
def test_generated_alias_programs_match_torch():
    _torch_run(default_settings(50))


@pytest.mark.crosscheck
@pytest.mark.slow
def test_generated_alias_programs_match_torch_long():
    _torch_run(long_settings(1_000))


# --- Shrunk programs the generator found (each failed before its fix) ---------------------------

REGRESSIONS = {
    # Memory.as_strided's offset defaulted to 0; torch.as_strided keeps its input's offset (1).
    "as_strided_keeps_the_source_offset": ((2, 0), (), 1, (("as_strided", 0, (), (), None),)),
    # set_(source, 8, ()) used offset 8 from the storage start; torch counts it from the source's
    # own offset (2): the tensor and the write land on element 10.
    "set_offset_counts_from_the_source_offset": (
        (12, 5),
        (1, 3, 3),
        2,
        (("set_", 0, 0, (8, (), None)), ("write", 0, ("copy_", None, np.float32(5.0)))),
    ),
    # ... and it took a non-contiguous source, which torch refuses ("must be contiguous").
    "set_geometry_needs_a_contiguous_source": (
        (1, 2),
        (),
        0,
        (("as_strided", 1, (2, 2), (0, 1), None), ("set_", 0, 2, (0, (), ()))),
    ),
    # set_(s, 0, (0,)) onto t2 = t1[::2] (size 0, stride 2) gave row-major stride 1; torch keeps
    # a tensor's strides when set_ leaves its size unchanged (found by CI's long torch run).
    "set_to_the_same_size_keeps_the_strides": (
        (1, 0),
        (),
        0,
        (
            ("write", 1, ("fill_", None, np.float32(0.0))),
            ("move", 1, ("slice", 0, None, None, 2)),
            ("write", 2, ("fill_", None, np.float32(0.0))),
            ("set_", 2, np.array(-7.0, np.float32), (0, (0,), None)),
        ),
    ),
    # Not ours: the NumPy model gave set_ without strides row-major strides after ours kept the
    # tensor's own (0, 1, 0) for an unchanged size, and refused them as too large for the buffer.
    "numpy_model_keeps_the_strides_of_an_unchanged_size": (
        (10, 4),
        (1, 1, 3),
        2,
        (
            ("set_", 1, 1, (2, (3, 2, 3), (0, 1, 0))),
            ("set_", 0, 0, (0, (), ())),
            ("set_", 1, 0, (0, (3, 2, 3), None)),
        ),
    ),
    # Not ours: torch wrote element 0 of an index_put_ with indices [0, 1, 0] into a size-1
    # dimension before refusing index 1; both refuse, and torch's interpreter now restores.
    "torch_writes_part_of_a_refused_index_put": (
        (8, 0),
        (3, 1),
        0,
        (
            (
                "write",
                0,
                (
                    "setitem_",
                    (Ellipsis, None, np.array([0, 1, 0]), None),
                    np.ones((1, 1), np.float32),
                ),
            ),
            ("write", 0, ("fill_", None, np.float32(0.5))),
        ),
    ),
    # Not ours: both sides refused to permute a 0-d tensor, and the harness then ran a step on
    # the tensor the permute would have made (an IndexError in the test itself; CI's long run).
    "both_refuse_the_move_a_later_step_uses": (
        (1, 1),
        (1, 1),
        0,
        (
            ("set_", 0, 1, (0, (), ())),
            ("move", 0, ("permute", (0, 1))),
            ("write", 2, ("fill_", None, np.float32(0.0))),
        ),
    ),
    # NumPy's placement of an advanced index's dimensions, where PyTorch's differs: the ints 0, 0
    # are applied first in PyTorch, so the mask's dimension stays in place: (1, 0, 1), not
    # NumPy's (0, 1, 1) (CI's long torch run; jaxparadigm.tensor.torch_index).
    "an_int_applies_before_the_mask": (
        (1, 0),
        (1, 1, 1),
        0,
        (
            (
                "write",
                0,
                (
                    "setitem_",
                    (Ellipsis, None, np.array([False]), None, 0, 0),
                    np.zeros((1, 0, 1), np.float32),  # PyTorch's shape (NumPy's: (0, 1, 1))
                ),
            ),
            ("write", 1, ("fill_", None, np.float32(0.0))),
        ),
    ),
    # Not ours: the NumPy model kept the new buffer of a set_ it refused ("buffer is too small"
    # is a TypeError there), so the storages differed after a refusal on both sides.
    "refused_set_of_values_allocates_nothing": (
        (3, 2),
        (3,),
        0,
        (
            ("set_", 0, np.zeros((2, 0), np.float32), (0, (), None)),
            ("write", 0, ("fill_", None, 1)),
        ),
    ),
}


def _all_equal(program, oracle) -> None:
    tally = Tally("alias regression")
    run_program(program, oracle, tally)
    assert tally.counts[EQUAL] == sum(tally.counts.values()) > 0, tally.summary()


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_programs_match_numpy(name):
    _all_equal(REGRESSIONS[name], NumpyProgram)


@pytest.mark.crosscheck
@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_programs_match_torch(name):
    pytest.importorskip("torch")
    _all_equal(REGRESSIONS[name], TorchProgram)


def test_regression_as_strided_and_set_offsets():
    mem, whole = Memory().tensor(np.arange(12, dtype=np.float32))
    t = mem.as_strided(whole, (1, 3, 3), (9, 3, 1), 2)
    assert mem.as_strided(t, (2,), (1,)).view.offset == 2  # torch.as_strided's default
    assert mem.as_strided(t, (2,), (1,), 0).view.offset == 0  # an explicit offset is absolute
    mem, s = mem.set_(t, t, 8, ())
    assert s.view.offset == 10 and float(mem.read(s)) == 10.0
    window = mem.as_strided(whole, (2, 2), (0, 1))
    with pytest.raises(ValueError, match=r"set_: source .* must be contiguous"):
        mem.set_(t, window, 0, ())
