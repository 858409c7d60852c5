"""Equivalent mutants of the core (issue 17): mutants that no test can kill, each with the reason.

``EQUIVALENT[mutant name] = (the mutated line as mutmut writes it, reason)``.
``benchmarks/mutation_score.py`` counts an entry only while the mutant still turns the code into
exactly that line (mutmut numbers the mutants of a function in order, so an edit of the function
can give the name to another mutant, which then shows up as a survivor again).
"""

_KIND = "dtype.kind (and _numeric_kind's result) is one character and 'X' is no NumPy kind"
_ZIP = "the zip runs only after value.ndim == len(shape) was checked: the lengths always match"

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
    # jaxparadigm/retrieval/ranking_metrics.py
    "jaxparadigm.retrieval.ranking_metrics.x_ranking_from_scores__mutmut_12": (
        'return np.argsort(-scores, kind="STABLE")',
        "NumPy reads the sort kind case-insensitively: 'STABLE' is 'stable'",
    ),
}
