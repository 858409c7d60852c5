"""Equivalent mutants of the core (issue 17): mutants that no test can kill, each with the reason.

``EQUIVALENT[mutant name] = (the mutated line as mutmut writes it, reason)``.
``tools/mutation_score.py`` counts an entry only while the mutant still turns the code into
exactly that line (mutmut numbers the mutants of a function in order, so an edit of the function
can give the name to another mutant, which then shows up as a survivor again).
"""

_KIND = "dtype.kind (and _numeric_kind's result) is one character and 'X' is no NumPy kind"
_ZIP = "the zip runs only after value.ndim == len(shape) was checked: the lengths always match"

_WIDTH = "the default is used only when there are no dims, and then no cell or header is padded"
_LABELS = "labels and rows are built with one entry per shape (plus 'result' for both): same length"
_BYTES = "the byte values are not part of the result: any nbytes of uint8 are timed the same"

_DIMS_ARG = "dims_arg does not use its name argument (it only unwraps f((2, 3)) to (2, 3))"
_EXPAND = "expand fills every entry from the right before reading it: the initial values are unread"

_OVERLAP = (
    "only sends more views from the stride test to the exact fallback (np.unique of the storage "
    "indices), which gives the same answer: the shortcut is a speed-up, not a different result"
)

_INT64 = (
    "NumPy 2 builds int64 from a Python int on every platform: np.full(shape, int) and "
    "np.arange(int) are int64 without the dtype"
)
_ALIGN = (
    "any split of the offset that passes the 'a + e <= g' check is a valid window (base + "
    "sum(starts * row) == offset by construction), so another remainder only picks a different "
    "window over the same elements, or falls back to starting at the offset: same values"
)
_MAT_ZIP = (
    "aligned, extent and grid all have k entries (one per kept dim): the lengths always match"
)
_CAST_BACK_ZERO = (
    "a zero is exact in every float dtype and the reverse sweep casts each cotangent to its "
    "variable's dtype (Graph.backward), so float32 zeros become the same zeros"
)
_VIEW_ZIP = "a View's shape and strides have the same length (__post_init__ refuses others)"

_SLICE = "for a positive step (checked just before) slice.indices clamps start and stop the same"
_INF = 'float() reads "INF" case-insensitively: it is inf'

_ADD_NONE = "_write only tests add for truth: None and False behave alike"

_POS_ROWS = (
    "an out-of-range row gets position rows (out of bounds) whatever its components or validity "
    "flag became, and the scatter drops position rows"
)
_CPU_ORDER = (
    "XLA:CPU applies duplicate scatter rows in order (checked with 100,000 rows into 10 slots), "
    "so the last-wins pass is invisible on CPU; it matters where XLA scatters in parallel"
)
_BOOL = "a float 1.0 concatenated to the bool mask is set back into a bool array: True either way"
_DROP = "'drop' is the default mode of a jnp .at[].set scatter"
_SAME_LEN = (
    "_read_leaves returns one leaf per template pair (it reads the restored items by the pairs' "
    "positions): the lengths always match"
)
_WEAK_INT = (
    "a Python int is weakly typed: tick's '+ jnp.int32(1)' makes the scan carry int32 (checked "
    "with jax_enable_x64 on, where the counter still wraps at 2**31), so the dtype is redundant"
)
_TORCH_PARAM = (
    "LinearLR never reads the parameter, and SGD.step skips a parameter without a gradient: the "
    "learning rates and last_epoch recorded do not depend on its size or requires_grad"
)
_TORCH_WARMUP = (
    "the demo records torch only after finishing the warmup, where LinearLR's recursive form "
    "has reached base_lr * end_factor whatever start_factor and total_iters were (the product "
    "of its ratios telescopes to end_factor / start_factor)"
)

_HINT = (
    "unique_indices only tells XLA the positions are unique (a speed hint); here they are: repeats "
    "were refused or reduced to the last write before"
)

EQUIVALENT: dict[str, tuple[str, str]] = {
    # jaxparadigm/train/validation.py
    "jaxparadigm.train.validation.x__numeric_kind__mutmut_2": ('if dtype.kind in "XXiuXX":', _KIND),
    "jaxparadigm.train.validation.x__numeric_kind__mutmut_7": (
        'if dtype.kind not in "XXfVXX":  # complex, bool, strings, dates, objects',
        _KIND,
    ),
    "jaxparadigm.train.validation.x__numeric_kind__mutmut_9": (
        'if dtype.kind not in "FV":  # complex, bool, strings, dates, objects',
        "kind 'f' then returns 'f' early, which is what the finfo probe returns for every NumPy "
        "kind-'f' dtype (there is no kind 'F')",
    ),
    "jaxparadigm.train.validation.x__schema_bounds__mutmut_9": (
        'if _numeric_kind(dtype) not in "XXifXX":',
        _KIND,
    ),
    "jaxparadigm.train.validation.x__check_values__mutmut_4": ('if kind in "XXfcXX":', _KIND),
    "jaxparadigm.train.validation.x__check_values__mutmut_22": (
        "value = value.astype(None)  # ml_dtypes floats compare exactly in float64",
        "astype(None) is astype(float64): np.dtype(None) is float64",
    ),
    "jaxparadigm.train.validation.x_validate_batch__mutmut_29": (
        "want is not None and want != got for want, got in zip(shape, value.shape, strict=None)",
        _ZIP,
    ),
    "jaxparadigm.train.validation.x_validate_batch__mutmut_32": (
        "want is not None and want != got for want, got in zip(shape, value.shape, )",
        _ZIP,
    ),
    "jaxparadigm.train.validation.x_validate_batch__mutmut_33": (
        "want is not None and want != got for want, got in zip(shape, value.shape, strict=False)",
        _ZIP,
    ),
    # jaxparadigm/tensor/broadcast.py
    "jaxparadigm.tensor.broadcast.x_explain_broadcast__mutmut_45": (
        "width = max([len(x) for row in rows + [header] for x in row], default=None)",
        _WIDTH,
    ),
    "jaxparadigm.tensor.broadcast.x_explain_broadcast__mutmut_49": (
        "width = max([len(x) for row in rows + [header] for x in row], default=2)",
        _WIDTH,
    ),
    "jaxparadigm.tensor.broadcast.x_explain_broadcast__mutmut_69": (
        "for label, row in zip(labels, rows, strict=None):",
        _LABELS,
    ),
    "jaxparadigm.tensor.broadcast.x_explain_broadcast__mutmut_72": (
        "for label, row in zip(labels, rows, ):",
        _LABELS,
    ),
    "jaxparadigm.tensor.broadcast.x_explain_broadcast__mutmut_73": (
        "for label, row in zip(labels, rows, strict=False):",
        _LABELS,
    ),
    # jaxparadigm/tensor/memory.py
    "jaxparadigm.tensor.memory.xǁMemoryǁfill___mutmut_9": (
        'return self._write(h, h.view.storage_indices(), value, add=None, what="fill_")',
        _ADD_NONE,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁview__mutmut_7": (
        "return dataclasses.replace(h, view=h.view.view(*dims_arg(shape, None)))",
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁview__mutmut_10": (
        'return dataclasses.replace(h, view=h.view.view(*dims_arg(shape, "XXshapeXX")))',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁview__mutmut_11": (
        'return dataclasses.replace(h, view=h.view.view(*dims_arg(shape, "SHAPE")))',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁcopy___mutmut_4": (
        'return self._write(h, h.view.storage_indices(), values, add=None, what="copy_")',
        _ADD_NONE,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁsetitem___mutmut_17": (
        'return self._write(h, positions, values, add=None, what="setitem_", repeats=advanced)',
        _ADD_NONE,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_7": (
        "unique = positions.size < 1 or np.unique(positions).size == positions.size",
        "a one-position write is unique either way (np.unique of one element)",
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_26": (
        'out_shape = ""',
        '"" differs from the target shape exactly as None does: the same error follows',
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_56": (
        "flat = positions.reshape(-2)",
        "NumPy reads any negative size in reshape as the one inferred dim",
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_59": (
        "if unique:",
        _CPU_ORDER,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_91": (
        "new = storage.at[flat].add(values, )",
        _HINT,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_92": (
        "new = storage.at[flat].add(values, unique_indices=False)",
        _HINT,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_97": (
        "new = storage.at[flat].set(values, )",
        _HINT,
    ),
    "jaxparadigm.tensor.memory.xǁMemoryǁ_write__mutmut_98": (
        "new = storage.at[flat].set(values, unique_indices=False)",
        _HINT,
    ),
    # jaxparadigm/autodiff (random sample, seed 17)
    "jaxparadigm.autodiff.rules.tangents.x_kept_tangents__mutmut_8": (
        "return [instantiate(t, p) for t, p, f in zip(tangents, primals, flags, strict=None) if f]",
        "each caller passes one tangent, one value and one flag per output, carry or stacked "
        "output of the same body (cond, scan, while): same length",
    ),
    "jaxparadigm.autodiff.rules.control_flow.x__dense__mutmut_7": (
        "return jnp.zeros(aval.shape, )",
        _CAST_BACK_ZERO,
    ),
    "jaxparadigm.autodiff.rules.conv.x__conv_rhs_ct__mutmut_7": (
        "return jnp.zeros(jnp.shape(rhs), )",
        _CAST_BACK_ZERO,
    ),
    "jaxparadigm.autodiff.rules.conv.x__conv_rhs_ct__mutmut_104": (
        "return out.astype(jnp.result_type(None))",
        "out is already in the cotangent's dtype (the conv's preferred element type); a float32 "
        "detour is exact for bfloat16/float16 values and the sweep casts each cotangent back "
        "to its variable's dtype (Graph.backward)",
    ),
    "jaxparadigm.autodiff.graph.xǁGraphǁbackward__mutmut_111": (
        "return [ct_env.get(v) if (w) or True else None for v, w in zip(self.inputs, wrt, strict=True)]",
        "the sweep sends cotangents only to active variables, and an input left out of wrt is "
        "not active: ct_env has no entry for it and .get gives None either way",
    ),
    "jaxparadigm.autodiff.rules.tangents.x_linear_rule__mutmut_35": (
        "for i, (p, t) in enumerate(zip(primals, tangents, strict=False))",
        "the interpreter hands a rule one tangent per primal (both lists come from the same "
        "equation's inputs): same length",
    ),
    "jaxparadigm.autodiff.rules.structural.x__cast_like__mutmut_4": (
        "return ct if (ct.dtype == dtype) or True else ct.astype(dtype)",
        "_cast_like's results are the rule's input cotangents, which the reverse sweep casts to "
        "each variable's dtype (Graph.backward): the second cast changes nothing",
    ),
    "jaxparadigm.autodiff.rules.structural.x__dot_transpose_lhs__mutmut_46": (
        "if jnp.result_type(None) != ct.dtype:",
        "y is then left in its own (narrower) dtype only when ct is float32; lax.dot_general "
        "takes mixed operands and widens y exactly (checked: float32 x bfloat16 equals "
        "float32 x float32(y) bit for bit)",
    ),
    "jaxparadigm.autodiff.graph.xǁGraphǁforward__mutmut_11": (
        "env: dict = dict(zip(self.jaxpr.constvars, self.consts, strict=False))",
        "a Graph's consts are its closed jaxpr's consts, one per constvar: same length",
    ),
    "jaxparadigm.autodiff.graph.xǁGraphǁforward__mutmut_19": (
        "env.update(zip(self.inputs, flat_args, strict=False))",
        "forward raises TypeError just before unless len(flat_args) == len(self.inputs)",
    ),
    "jaxparadigm.autodiff.rules.reduce_window.x__reduce_window_chooser_vjp__mutmut_18": (
        "config = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, bdil, strict=None)]",
        "reduce_window's padding and base_dilation have one entry per operand dim (jax checks "
        "both when it binds the primitive): same length",
    ),
    "jaxparadigm.autodiff.rules.reduction.x__tree_reduce__mutmut_79": (
        "second = [lax.pad(x, i, pads) for x, i in zip(second, init_values, strict=None)]",
        "lax.reduce binds one init value per operand: same length",
    ),
    "jaxparadigm.autodiff.rules.sorting.x__scatter_along__mutmut_21": (
        "mode=None,",
        "the positions scattered to are a permutation of the sorted axis, always in bounds, and "
        "modes differ only for out-of-bounds indices (PROMISE_IN_BOUNDS only saves the checks)",
    ),
    # jaxparadigm/tensor/view.py (random sample, seed 17)
    "jaxparadigm.tensor.view.xǁViewǁstorage_indices__mutmut_7": (
        "index = np.full(self.shape, self.offset, )",
        _INT64,
    ),
    "jaxparadigm.tensor.view.xǁViewǁstorage_indices__mutmut_14": (
        "for d, (n, s) in enumerate(zip(self.shape, self.strides, )):",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁstorage_indices__mutmut_25": (
        "index = index + (np.arange(n, dtype=None) * s).reshape(axis_shape)",
        _INT64,
    ),
    "jaxparadigm.tensor.view.xǁViewǁcheck_bounds__mutmut_16": (
        "n - 1 if s > 0 else 0 for n, s in zip(self.shape, self.strides, strict=None)",
        _VIEW_ZIP,
    ),
    # jaxparadigm/tensor/materialize.py (random sample, seed 17)
    "jaxparadigm.tensor.materialize.x__compute_plan__mutmut_105": (
        "rem = view.offset % row[1]",
        _ALIGN,
    ),
    "jaxparadigm.tensor.materialize.x__compute_plan__mutmut_133": (
        "if all(a + e <= g for a, e, g in zip(aligned[1:], extent[1:], grid[1:], strict=False)):",
        _MAT_ZIP,
    ),
    # jaxparadigm/tensor/view.py
    "jaxparadigm.tensor.view.xǁViewǁexpand__mutmut_7": (
        'target = as_int_tuple(dims_arg(shape, None), "shape")',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.view.xǁViewǁexpand__mutmut_10": (
        'target = as_int_tuple(dims_arg(shape, "XXshapeXX"), "shape")',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.view.xǁViewǁexpand__mutmut_11": (
        'target = as_int_tuple(dims_arg(shape, "SHAPE"), "shape")',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.view.xǁViewǁexpand__mutmut_18": ("sizes = [1] * len(target)", _EXPAND),
    "jaxparadigm.tensor.view.xǁViewǁexpand__mutmut_21": ("strides = [1] * len(target)", _EXPAND),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_1": (
        "if self.numel() < 1:",
        "a one-element view has no dim of size > 1, so the code after returns False too",
    ),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_17": (
        "if dims and dims[0][1] == 0:",
        _OVERLAP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_22": (
        "span = 2  # every stride must exceed the extent spanned by the smaller ones",
        _OVERLAP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_23": ("if s <= span:", _OVERLAP),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_30": (
        "span = s * (n + 1) + span",
        _OVERLAP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁpermute__mutmut_3": ("dims = dims_arg(dims, None)", _DIMS_ARG),
    "jaxparadigm.tensor.view.xǁViewǁpermute__mutmut_6": (
        'dims = dims_arg(dims, "XXdimsXX")',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.view.xǁViewǁpermute__mutmut_7": (
        'dims = dims_arg(dims, "DIMS")',
        _DIMS_ARG,
    ),
    "jaxparadigm.tensor.view.xǁViewǁis_contiguous__mutmut_8": (
        "for n, s in zip(reversed(self.shape), reversed(self.strides), strict=None):",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁis_contiguous__mutmut_11": (
        "for n, s in zip(reversed(self.shape), reversed(self.strides), ):",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁis_contiguous__mutmut_14": (
        "for n, s in zip(reversed(self.shape), reversed(self.strides), strict=False):",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_8": (
        "dims = sorted((s, n) for n, s in zip(self.shape, self.strides, strict=None) if n > 1)",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_11": (
        "dims = sorted((s, n) for n, s in zip(self.shape, self.strides, ) if n > 1)",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁhas_internal_overlap__mutmut_12": (
        "dims = sorted((s, n) for n, s in zip(self.shape, self.strides, strict=False) if n > 1)",
        _VIEW_ZIP,
    ),
    "jaxparadigm.tensor.view.xǁViewǁexpand__mutmut_53": (
        "stride = sizes[i + 1] * strides[i + 1] if i + 1 < len(target) else 2",
        "only a scalar view expanded to (1,) reaches it: the stride of a size-1 dim, which addresses "
        "nothing (torch itself reports 0 there)",
    ),
    "jaxparadigm.tensor.view.xǁViewǁslice__mutmut_38": (
        "lo, hi, _ = slice(start, stop, None).indices(self.shape[d])",
        _SLICE,
    ),
    "jaxparadigm.tensor.view.xǁViewǁslice__mutmut_41": (
        "lo, hi, _ = slice(start, stop, ).indices(self.shape[d])",
        _SLICE,
    ),
    # jaxparadigm/tensor/scatter.py
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_47": (
        "idx = jnp.where(valid[:, None], idx, 1).astype(dtype)  # in range, so the cast is exact",
        _POS_ROWS,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_67": (
        "if n >= 1:",
        "one row has nothing to deduplicate: the pass keeps it",
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_68": (
        "if n > 2:",
        _CPU_ORDER,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_73": (
        "order = jnp.argsort(flat, )",
        "stable=True is jnp.argsort's default",
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_80": (
        "last_sorted = jnp.concatenate([ranked[1:] != ranked[:+1], jnp.ones((1,), bool)])",
        _CPU_ORDER,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_83": (
        "last_sorted = jnp.concatenate([ranked[1:] != ranked[:-1], jnp.ones((1,), None)])",
        _BOOL,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_85": (
        "last_sorted = jnp.concatenate([ranked[1:] != ranked[:-1], jnp.ones((1,), )])",
        _BOOL,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_87": (
        "valid = jnp.zeros(n, bool).at[order].set(last_sorted)",
        _POS_ROWS,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_88": (
        "valid |= jnp.zeros(n, bool).at[order].set(last_sorted)",
        _CPU_ORDER,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_103": (
        "out = x.reshape((rows,) + x.shape[k:]).at[target].set(upd, mode=None)",
        _DROP,
    ),
    "jaxparadigm.tensor.scatter.x__scatter__mutmut_105": (
        "out = x.reshape((rows,) + x.shape[k:]).at[target].set(upd, )",
        _DROP,
    ),
    "jaxparadigm.tensor.broadcast.x_explain_broadcast__mutmut_54": (
        'label_w = max([len(x) for x in labels + ["AXIS"]])',
        "only the length of the word is used: len('AXIS') == len('axis')",
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_43": (
        "zero_copy.append(None)",
        "the flags are only read through all(), for which None is as false as False",
    ),
    "jaxparadigm.tensor.view_strides.x_compute_view_strides__mutmut_12": (
        "new_strides = [1] * len(new_shape)",
        "every entry is written before the strides are returned (else None is returned)",
    ),
    "jaxparadigm.tensor.view_strides.x_compute_view_strides__mutmut_64": (
        "if tensor_d >= 0:",
        "at tensor_d == 0 the loop ends: the reset is never read",
    ),
    # jaxparadigm/tensor/transfer.py
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_17": (
        "host = (np.arange(nbytes, dtype=np.int64) / 251).astype(np.uint8)",
        _BYTES,
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_19": (
        "host = (np.arange(nbytes, dtype=None) % 251).astype(np.uint8)",
        "np.arange of ints is int64 without a dtype",
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_21": (
        "host = (np.arange(nbytes, ) % 251).astype(np.uint8)",
        "np.arange of ints is int64 without a dtype",
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_22": (
        "host = (np.arange(nbytes, dtype=np.int64) % 252).astype(np.uint8)",
        _BYTES,
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_51": (
        "back = np.array(arr, )",
        "copy=True is np.array's default",
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_114": (
        '"h2d_gbps": nbytes / h2d_ready / 1e9 if h2d_ready > 0 else float("INF"),',
        _INF,
    ),
    "jaxparadigm.tensor.transfer.x_transfer_profile__mutmut_131": (
        '"d2h_gbps": nbytes / d2h_s / 1e9 if d2h_s > 0 else float("INF"),',
        _INF,
    ),
    # jaxparadigm/retrieval/eval/ranking_metrics.py
    "jaxparadigm.retrieval.eval.ranking_metrics.x_ranking_from_scores__mutmut_12": (
        'return np.argsort(-scores, kind="STABLE")',
        "NumPy reads the sort kind case-insensitively: 'STABLE' is 'stable'",
    ),
    # jaxparadigm/optim/schedules/decay.py
    "jaxparadigm.optim.schedules.decay.x_join__mutmut_60": (
        "for boundary, piece in zip(boundaries, schedules[1:], strict=None):",
        "join checks len(schedules) == len(boundaries) + 1 before it builds the schedule: "
        "boundaries and schedules[1:] always have the same length",
    ),
    # jaxparadigm/optim/schedules/overflow.py
    "jaxparadigm.optim.schedules.overflow.x__torch_linear_lr__mutmut_3": (
        "param = torch.zeros(1, requires_grad=None)",
        _TORCH_PARAM,
    ),
    "jaxparadigm.optim.schedules.overflow.x__torch_linear_lr__mutmut_5": (
        "param = torch.zeros(1, )",
        _TORCH_PARAM,
    ),
    "jaxparadigm.optim.schedules.overflow.x__torch_linear_lr__mutmut_6": (
        "param = torch.zeros(2, requires_grad=True)",
        _TORCH_PARAM,
    ),
    "jaxparadigm.optim.schedules.overflow.x__torch_linear_lr__mutmut_7": (
        "param = torch.zeros(1, requires_grad=False)",
        _TORCH_PARAM,
    ),
    "jaxparadigm.optim.schedules.overflow.x__torch_linear_lr__mutmut_19": (
        "opt, end_factor=end_factor, total_iters=total_iters",
        _TORCH_WARMUP,
    ),
    "jaxparadigm.optim.schedules.overflow.x__torch_linear_lr__mutmut_21": (
        "opt, start_factor=start_factor, end_factor=end_factor, )",
        _TORCH_WARMUP,
    ),
    "jaxparadigm.optim.schedules.overflow.x_overflow_demo__mutmut_39": (
        "init = (jnp.asarray(start, None), jnp.asarray(start, jnp.int32))",
        _WEAK_INT,
    ),
    "jaxparadigm.optim.schedules.overflow.x_overflow_demo__mutmut_41": (
        "init = (jnp.asarray(start, ), jnp.asarray(start, jnp.int32))",
        _WEAK_INT,
    ),
    "jaxparadigm.optim.schedules.overflow.x_overflow_demo__mutmut_52": (
        "_, (naive, safe) = jax.lax.scan(tick, init, length=n)",
        "xs=None is jax.lax.scan's default (the loop length comes from length=n)",
    ),
    # jaxparadigm/train/checkpoint.py
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁ_read_leaves__mutmut_6": (
        'f"{i:05d}": jax.ShapeDtypeStruct(np.shape(None), getattr(x, "dtype", np.asarray(x).dtype))',
        "orbax's StandardRestore ignores the target's shape (checked: a () target for a stored "
        "(3, 4) array restores (3, 4)); only the dtype of the targets takes effect",
    ),
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁ__init____mutmut_31": (
        "cleanup_tmp_directories=None,  # done by _purge_leftovers, before returning",
        "orbax 0.12 reads cleanup_tmp_directories only for truth (checkpoint_manager.py: 'if "
        "self._options.cleanup_tmp_directories:'): None and False behave alike",
    ),
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁsave__mutmut_55": (
        "for i, ((_, x), leaf) in enumerate(zip(pairs, leaves, strict=None))",
        "pairs and leaves flatten the same state with tree_flatten_with_path (_flat): one leaf "
        "per pair, the lengths always match",
    ),
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁrestore__mutmut_100": (
        "x if (isinstance(t, jax.Array)) or True else leaf",
        "for a template leaf that is not a jax.Array, _read_leaves already returns a host NumPy "
        "array, and leaf is to_host of it (np.asarray: the same values, dtype and shape)",
    ),
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁ_set_aside__mutmut_2": (
        "os.makedirs(os.path.join(self.directory, _DELETED), exist_ok=None)",
        "'.deleted' is removed when the Checkpointer opens and after every save, and a save sets "
        "aside at most one step before it: the directory never exists when makedirs runs",
    ),
    "jaxparadigm.train.checkpoint.x__read_meta__mutmut_3": (
        "meta = json.loads(path.read_text(encoding=None))",
        "the locale's encoding is UTF-8 on this machine: only a non-UTF-8 locale tells them apart",
    ),
    "jaxparadigm.train.checkpoint.x__read_meta__mutmut_5": (
        'meta = json.loads(path.read_text(encoding="UTF-8"))',
        "Python reads codec names case-insensitively: 'UTF-8' is 'utf-8'",
    ),
    "jaxparadigm.train.checkpoint.x__read_meta__mutmut_27": (
        'if bad or meta.get("format", 2) not in (1, _FORMAT):',
        "the default only meets the test 'in (1, 2)', which 1 and 2 both pass",
    ),
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁrestore__mutmut_84": (
        "for (_, t), leaf in zip(t_pairs, leaves, strict=None):",
        _SAME_LEN,
    ),
    "jaxparadigm.train.checkpoint.xǁCheckpointerǁrestore__mutmut_87": (
        "for (_, t), leaf in zip(t_pairs, leaves, ):",
        _SAME_LEN,
    ),
    "jaxparadigm.train.checkpoint.x__drop_closed_loop_callbacks__mutmut_4": (
        'if getattr(previous, "drops_closed_loop", None):',
        "the default is only tested for truth: None and False behave alike",
    ),
}

# Issue 39: the modules added since 0a67870.
_PATH_RESOLVERS = (
    "PyYAML's composer uses a node's index only for path resolvers (yaml.add_path_resolver), "
    "and none is registered on SafeLoader or its subclasses"
)
_DEEP = (
    "deep only changes when nested values are filled (at once or at the end of the document); "
    "the one case where the order shows, a recursive alias, is refused before construction"
)
_UNHASHABLE_KEY = (
    "a key that is not a scalar is a list or dict, unhashable however deep it is built: "
    "seen.get raises TypeError either way and SafeLoader reports it"
)
_ZERO_PEAK = (
    "alpha is read only by cosine_decay(peak_value, ...), whose value is peak_value * (...): "
    "with peak_value == 0 that is 0 for alpha 0 or 1 (NaN for both where (...) is infinite)"
)
_ONE_PER_DOC = (
    "_unit_offsets returns one entry per document (a comprehension over docs, or encode_batch of "
    "their texts): the lengths always match"
)
_CHARREFS_NONE = (
    "HTMLParser only tests convert_charrefs for truth (goahead, parse_starttag): None is False"
)
_SAME_LENGTH = "both sequences are built with one entry per item of the same list: same length"
EQUIVALENT.update(
    {
        "jaxparadigm.train.checkpoint.xǁCheckpointerǁall_steps__mutmut_15": (
            "stacklevel=3,",
            "not detectable under mutmut: its trampoline adds a frame, so stacklevel 3 names the "
            "caller there; outside mutmut test_checkpoint_boundaries pins stacklevel=2",
        ),
        "jaxparadigm.autodiff.rules.control_flow.x__branch_vjp__mutmut_15": (
            "return [_dense(c, v.aval) for c, v in zip(in_cts, graph.inputs, strict=None)]",
            "graph.backward returns one cotangent per graph input: same length",
        ),
        "jaxparadigm.retrieval.index.store.x__save_npy__mutmut_11": (
            "np.save(fh, embeddings, )",
            "allow_pickle matters only for object arrays; the embeddings are float32 (checked "
            "by write_shard, its only caller, with np.ascontiguousarray(..., float32)): the same bytes",
        ),
        "jaxparadigm.retrieval.index.store.x_open_passages__mutmut_8": (
            "with open(path, ) as fh:",
            "the file is used only through its descriptor (fstat, mmap), the same in text and "
            "binary mode",
        ),
        "jaxparadigm.app.cpu_devices.x_prepare_command_devices__mutmut_19": (
            "request, None, mode_set=True, single_process=True, user_count=user, running=running",
            "mode_set is read only to promote a config's training to the data layout, and a "
            "command passes no config (cfg None never promotes)",
        ),
        "jaxparadigm.autodiff.jvp_interpreter.x_is_float__mutmut_8": (
            'dtype = getattr(aval_or_dtype, "XXdtypeXX", aval_or_dtype)',
            "jnp.issubdtype reads an aval or an array through np.dtype, which takes its .dtype: "
            "the same answer (tests/autodiff/test_jvp_interpreter_boundaries.py checks both)",
        ),
        "jaxparadigm.autodiff.jvp_interpreter.x_eval_jvp__mutmut_12": (
            "env: dict = dict(zip(jaxpr.constvars, consts, ))",
            "every caller passes a ClosedJaxpr's consts with its jaxpr, or () for a jaxpr "
            "without constvars: the lengths always match",
        ),
        "jaxparadigm.autodiff.rules.control_flow.x__carry_fixed_point__mutmut_11": (
            "grown = [a or b for a, b in zip(nz_carry, nz_out[:n_carry], strict=None)]",
            "nz_carry has n_carry entries and nz_out[:n_carry] too: same length",
        ),
        "jaxparadigm.autodiff.rules.reduce_window.x__reduce_window_chooser_vjp__mutmut_45": (
            "start = [k * w for k, w in zip(offset, wdil, strict=False)]",
            "offset and window_dilation both have one entry per operand dimension",
        ),
        "jaxparadigm.autodiff.rules.linalg.x_transpose_jvp__mutmut_66": (
            "for c, a in zip(cts, closed.out_avals, strict=None)",
            "cts keeps the outputs the mask kept, and closed's outputs are those same outputs",
        ),
        "jaxparadigm.autodiff.rules.linalg.x__lu_jvp_matrix__mutmut_84": (
            "la = _tri_solve(low, pda, left_side=True, lower=True, transpose_a=False, )",
            "low is tril(lu, -1) plus the identity: its diagonal is exactly 1, so solving with "
            "or without unit_diagonal gives the same result",
        ),
        "jaxparadigm.retrieval.documents.reading.x__utf8__mutmut_4": (
            'text = data.decode("UTF-8")',
            "Python reads codec names case-insensitively: 'UTF-8' is 'utf-8'",
        ),
        "jaxparadigm.retrieval.service.http_handler.xǁ_Handlerǁ_send__mutmut_41": (
            'self.send_header("connection", "close")',
            "header names are case-insensitive (RFC 9110 5.1), and send_header compares the "
            "name lower-cased to set close_connection: the same answer and the same close",
        ),
        "jaxparadigm.retrieval.service.http_handler.xǁ_Handlerǁdo_POST__mutmut_26": (
            'span.set_attribute("request.id", self.headers.get("X-REQUEST-ID", ""))',
            "the request's headers are an email.message.Message, whose get() compares names "
            "case-insensitively (as HTTP's are, RFC 9110 5.1): the same id",
        ),
        "jaxparadigm.retrieval.service.http_handler.xǁ_Serverǁshutdown_request__mutmut_7": (
            "while time.monotonic() <= deadline and request.recv(65536):",
            "monotonic() equals the deadline at one instant at most: one more 0.1 s read "
            "there, within the documented bound",
        ),
        "jaxparadigm.retrieval.service.http_handler.x_bind_listener__mutmut_17": (
            "sock = socket.socket(socket.AF_INET, )",
            "SOCK_STREAM is socket.socket's default type",
        ),
        "jaxparadigm.retrieval.sparse.bm25.x_bm25_index__mutmut_99": (
            "postings = {w: (np.asarray(ids[w]), np.asarray(counts[w], None)) for w in ids}",
            "counts are small integers, read only in float64 arithmetic with idf, k1 and the "
            "norms: int64 and float64 arrays of them give the same scores",
        ),
        "jaxparadigm.retrieval.ranking.excerpt.x__cut__mutmut_2": (
            "if end - start >= max_chars:",
            "a segment of exactly max_chars enters the cut with lo = start (end - max_chars is "
            "start) and hi = end: the same span",
        ),
        "jaxparadigm.retrieval.dense.vector_search.xǁVectorSearcherǁ_place__mutmut_74": (
            "jnp.zeros((), ), NamedSharding(self.mesh, PartitionSpec())",
            "the placeholder scale of rows without scales (float32, bfloat16) is never read: the "
            "search multiplies by a scale only for int8 rows, which bring their own scales",
        ),
        "jaxparadigm.retrieval.dense.vector_search.x_compact_rows__mutmut_38": (
            "codes = np.clip(np.rint(x / scale[:, None]), None, 127).astype(np.int8)",
            "|x| <= peak and scale = peak / 127, so x / scale rounds to at least -127: the lower "
            "clip never binds",
        ),
        "jaxparadigm.retrieval.index.manifest_schema.xǁ_Checkerǁrecords__mutmut_23": (
            'f"{where}[{i}].{key}", r[key], lo, None',
            "hi=None is integer()'s default: the same call",
        ),
        "jaxparadigm.retrieval.documents.passages.x_split_passages__mutmut_17": (
            "for doc, offsets in zip(docs, _unit_offsets(docs, tokenizer), strict=None):",
            _ONE_PER_DOC,
        ),
        "jaxparadigm.retrieval.documents.passages.x_split_passages__mutmut_25": (
            "for doc, offsets in zip(docs, _unit_offsets(docs, tokenizer), strict=False):",
            _ONE_PER_DOC,
        ),
        "jaxparadigm.retrieval.documents.readable_text.xǁ_Readableǁ__init____mutmut_1": (
            "super().__init__(convert_charrefs=None)",
            _CHARREFS_NONE,
        ),
        "jaxparadigm.optim.schedules.decay.x_warmup_cosine_decay__mutmut_45": (
            "alpha = 1.0 if peak_value == 0.0 else end_value / peak_value",
            _ZERO_PEAK,
        ),
        "jaxparadigm.config.yaml_loader.xǁ_StrictLoaderǁcompose_node__mutmut_21": (
            "node = super().compose_node(parent, None)",
            _PATH_RESOLVERS,
        ),
        "jaxparadigm.config.yaml_loader.xǁ_StrictLoaderǁconstruct_mapping__mutmut_1": (
            "def construct_mapping(self, node, deep=True):",
            _DEEP,
        ),
        "jaxparadigm.config.yaml_loader.xǁ_StrictLoaderǁconstruct_mapping__mutmut_12": (
            "key = self.construct_object(key_node, deep=False)",
            _UNHASHABLE_KEY,
        ),
        "jaxparadigm.config.yaml_loader.xǁ_StrictLoaderǁconstruct_mapping__mutmut_26": (
            "return super().construct_mapping(node, )",
            _DEEP,
        ),
    }
)
