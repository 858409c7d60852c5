"""Probing a claim's ``decide`` rule with altered evidence (issue points 1 and 2).

* :func:`read_paths` -- the evidence leaves a rule reads (a recording dict wraps the evidence).
* :func:`perturbations` -- each leaf altered: booleans flipped; numbers scaled by 0, 0.5, 2, 100 and
  replaced by NaN (elementwise in lists); measured PyTorch values replaced by "not measured";
  strings emptied or changed; lists emptied.
* :func:`check_statuses` -- every read leaf has an expectation, every perturbation gives the expected
  status, and the statuses reached are exactly those the rule's docstring names.
* :func:`unexplained_numbers` -- numbers in the summary that no evidence field produces: every leaf
  is nudged at once (ints x 1000 + 7, floats x 1.37, digits in strings, lists of strings doubled;
  once keeping zeros, once moving them) and, where the status is kept, the summary's numbers that
  vanish are "explained"; a number printed only once (or a zero) may also vanish by nudging one
  field alone.
  What is left was typed in (e.g. "on this 2-core CPU").
"""

from __future__ import annotations

import collections
import copy
import math
import re
from collections.abc import Callable

from jaxparadigm.claims.torch_side import NOT_MEASURED

NAN = float("nan")
SCALES = (0.0, 0.5, 2.0, 100.0)
STATUS_WORDS = re.compile(r"``(holds|fails|conditional)``")
NUMBER = re.compile(r"(?<![\w.@-])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?%?")
SAME = "same"  # expectation: the status of the unaltered evidence


class _Recording(dict):
    """A dict that records the path of every non-dict value read from it."""

    def __init__(self, data, path, reads):
        super().__init__(data)
        self._path, self._reads = path, reads

    def __getitem__(self, key):
        value = super().__getitem__(key)
        path = (*self._path, key)
        if isinstance(value, dict):
            return _Recording(value, path, self._reads)
        self._reads.add(path)
        return value

    def get(self, key, default=None):
        return self[key] if dict.__contains__(self, key) else default

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]


def read_paths(exp, evidence) -> set[tuple]:
    """Paths of the evidence leaves that ``exp``'s rule reads on ``evidence``."""
    reads: set[tuple] = set()
    exp.rule(_Recording(copy.deepcopy(evidence), (), reads))
    return reads


def get_path(evidence, path):
    for key in path:
        evidence = evidence[key]
    return evidence


def with_value(evidence, path, value):
    """A deep copy of ``evidence`` with the leaf at ``path`` replaced by ``value``."""
    out = copy.deepcopy(evidence)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _map_numbers(value, fn):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return fn(value)
    if isinstance(value, list):
        return [_map_numbers(v, fn) for v in value]
    return value


def _has_number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, list) and any(_has_number(v) for v in value)


def perturbations(path, value) -> list[tuple[str, object]]:
    """(label, altered value) pairs for one leaf."""
    out = []
    if isinstance(value, bool):
        out.append(("flip", not value))
    elif _has_number(value):
        out += [(f"x{s:g}", _map_numbers(value, lambda v, s=s: v * s)) for s in SCALES]
        out.append(("nan", _map_numbers(value, lambda v: NAN)))
    elif isinstance(value, list) and value and all(isinstance(v, bool) for v in value):
        out.append(("flip", [not v for v in value]))
    elif isinstance(value, str) and value != NOT_MEASURED:
        out += [("empty", ""), ("other", "something else")] if value else [("other", "an error")]
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        out.append(("empty", []))
    if _is_torch_field(path) and value != NOT_MEASURED:
        out.append(("not measured", NOT_MEASURED))
    return out


def _is_torch_field(path) -> bool:
    """A field measured on PyTorch itself (not our port of a PyTorch formula)."""
    keys = [str(k) for k in path]
    return "torch_formula_port" not in keys and any(
        k == "torch" or k.startswith(("torch_", "real_torch")) for k in keys
    )


def named_statuses(exp) -> set[str]:
    """The statuses the rule's docstring names (as ``holds``, ``fails``, ``conditional``)."""
    return set(STATUS_WORDS.findall(exp.rule.__doc__ or ""))


def _expected(expect, path, label, value, base_status):
    rule = expect.get("/".join(map(str, path)), SAME)
    want = rule(label, value) if callable(rule) else rule
    return base_status if want == SAME else want


def check_statuses(
    exp, base, expect: dict[str, Callable | str], extra: list[tuple[dict, str]] = ()
) -> set[str]:
    """Assert that each perturbation of each read leaf gives ``expect[path](label, value)``.

    ``expect`` maps "a/b/c" paths to a status, ``SAME``, or ``fn(label, value) -> status``; leaves
    under ``platform`` default to ``SAME``. ``extra``: (changes {path: value}, status) for statuses
    that need several fields changed at once. Returns the statuses reached.
    """
    base_status = exp.verdict_from(base).status
    reads = read_paths(exp, base)
    keys = {"/".join(map(str, p)) for p in reads}
    uncovered = sorted(k for k in keys if k not in expect and not k.startswith("platform/"))
    assert not uncovered, f"{exp.claim_id}: read but no expectation: {uncovered}"
    reached, wrong = {base_status}, []
    for path in sorted(reads, key=str):
        for label, value in perturbations(path, get_path(base, path)):
            got = exp.verdict_from(with_value(base, path, value)).status
            want = _expected(expect, path, label, value, base_status)
            reached.add(got)
            if got != want:
                wrong.append(f"{'/'.join(map(str, path))} {label}: got {got}, expected {want}")
    for changes, want in extra:
        ev = base
        for key, value in changes.items():
            ev = with_value(ev, tuple(key.split("/")), value)
        got = exp.verdict_from(ev).status
        reached.add(got)
        if got != want:
            wrong.append(f"{changes}: got {got}, expected {want}")
    assert not wrong, f"{exp.claim_id}:\n" + "\n".join(wrong)
    assert reached == named_statuses(exp), (exp.claim_id, reached, named_statuses(exp))
    return reached


def _nudge(v, zero_too=True):
    """ints x 1000 + 7, floats x 1.37 (no collision with small counts, equalities kept); zeros move
    (to 7 / 0.0123) only when ``zero_too``."""
    if not v or (isinstance(v, float) and not math.isfinite(v)):
        return (7 if isinstance(v, int) else 0.0123) if (zero_too and v == 0) else v
    return v * 1000 + 7 if isinstance(v, int) else v * 1.37


def _nudged(value, zero_too=True):
    """A leaf nudged: its numbers (also inside strings) moved, a list of strings doubled."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value + value
    if isinstance(value, str) and value != NOT_MEASURED:
        return re.sub(r"\d+", lambda m: str(_nudge(int(m.group()), zero_too)), value)
    return _map_numbers(value, lambda v: _nudge(v, zero_too))


def _nudge_all(evidence, zero_too):
    """Every number of the evidence (also inside strings) nudged at once: equal fields stay equal."""
    if isinstance(evidence, dict):
        return {k: _nudge_all(v, zero_too) for k, v in evidence.items()}
    if isinstance(evidence, list) and evidence and all(isinstance(v, str) for v in evidence):
        return evidence
    if isinstance(evidence, bool) or evidence is None:
        return evidence
    return _nudged(evidence, zero_too)


def _is_zero(token: str) -> bool:
    return float(token.rstrip("%")) == 0


def unexplained_numbers(exp, base, allowed: tuple[str, ...] = ()) -> collections.Counter:
    """Numbers in the summary of ``base`` that no nudge of a read numeric leaf changes."""
    verdict = exp.verdict_from(base)
    tokens = collections.Counter(NUMBER.findall(verdict.summary))
    for a in allowed:
        tokens[a] -= 1
    tokens = +tokens

    def vanished(evidence):
        return tokens - collections.Counter(NUMBER.findall(exp.verdict_from(evidence).summary))

    explained = collections.Counter()
    for zero_too in (False, True):  # all leaves at once; counts only where the status is kept
        nudged = _nudge_all(base, zero_too)
        if exp.verdict_from(nudged).status == verdict.status:
            explained |= vanished(nudged)
    for path in read_paths(exp, base):  # counts of listed strings (lists are not nudged at once)
        value = get_path(base, path)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            explained += vanished(with_value(base, path, _nudged(value)))
    left = tokens - explained
    # A number printed once may also be explained by nudging one field alone (the status may change).
    for path in read_paths(exp, base):
        value = get_path(base, path)
        if not isinstance(value, bool) and _nudged(value) != value:
            left -= collections.Counter(
                {
                    t: n
                    for t, n in vanished(with_value(base, path, _nudged(value))).items()
                    if tokens[t] == 1 or _is_zero(t)
                }
            )
    return left
