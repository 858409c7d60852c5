"""Every public constructor of ``jaxparadigm.optim`` checks its numeric arguments when it is built
(C4.1-C4.4; ``hyperparam_checks``' two policies), generated from the signatures.

For each constructor (optimisers, transformations, schedules) and each numeric argument (a
parameter whose default is a number, a required one from ``REQUIRED``, ``sgd``'s ``momentum``):

* a string (``"0.5"``) raises one ``TypeError``/``ValueError`` naming the argument (``name=``) at
  construction, never later in an update (``lion(b1="0.9")`` failed at the first update);
* a bool and NaN are refused (an argument no optax function takes) or accepted as optax accepts
  them with one ``UserWarning`` naming the argument: never silently;
* a negative number is refused, or warned about, or gives finite updates (or rates).

Whatever is accepted must not fail later: two updates on tiny params (or the schedule at a few
counts) run without an exception. A public name that is not classified below fails the test.
"""

import inspect
import math
import warnings

import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxparadigm.optim as O
from jaxparadigm.optim import schedules as S

# Values for the required arguments (valid ones); each also gets the bad values in its turn.
REQUIRED = {
    "learning_rate": 0.1,
    "max_norm": 1.0,
    "clip_norm": 1.0,
    "decay": 0.9,
    "value": 0.1,
    "init_value": 0.1,
    "decay_steps": 10,
    "end_value": 0.01,
    "transition_steps": 10,
    "power": 1.0,
    "base_lr": 0.1,
    "peak_value": 0.2,
    "warmup_steps": 3,
}
# Numeric arguments whose default is not a number.
NUMERIC_WITHOUT_NUMBER_DEFAULT = {"momentum"}
# Public callables that are not constructors taking numbers, and why.
NOT_CONSTRUCTORS = {
    "adam_state_report": "reads a state",
    "chain_for": "takes an OptimSettings (checked by the settings, test_chain_config_errors)",
    "schedule_for": "takes an OptimSettings, as chain_for",
    "global_norm": "a function of a pytree",
    "inject_hyperparams": "takes a factory (its values: test_inject_boundaries)",
    "safe_increment": "a function of a counter",
    "set_hyperparams": "changes a state (test_inject_boundaries)",
    "scale_by_schedule": "takes a callable only",
    "schedules.join": "takes schedules and boundaries (test_schedule_boundaries)",
}
BAD = {"str": "0.5", "bool": True, "nan": math.nan, "negative": -1.0, "inf": math.inf}
PARAMS = {"w": jnp.array([1.0, -2.0]), "b": jnp.array(0.5)}
GRADS = {"w": jnp.array([0.3, 0.1]), "b": jnp.array(-0.2)}


def _public():
    found = {n: getattr(O, n) for n in O.__all__}
    found.update({f"schedules.{n}": getattr(S, n) for n in S.__all__})
    return {
        n: f
        for n, f in found.items()
        if callable(f) and inspect.isfunction(f) and n not in NOT_CONSTRUCTORS
    }


def _numeric(fn):
    out = []
    for name, p in inspect.signature(fn).parameters.items():
        default = p.default
        number = isinstance(default, (int, float)) and not isinstance(default, bool)
        if name in REQUIRED or name in NUMERIC_WITHOUT_NUMBER_DEFAULT or number:
            out.append(name)
    return out


CONSTRUCTORS = _public()
CASES = [(c, a, b) for c in sorted(CONSTRUCTORS) for a in _numeric(CONSTRUCTORS[c]) for b in BAD]


def _exercise(built):
    """Two updates (a transformation) or the rate at a few counts (a schedule): the values."""
    if isinstance(built, optax.GradientTransformation):
        state = built.init(PARAMS)
        values = []
        for _ in range(2):
            updates, state = built.update(GRADS, state, PARAMS)
            values += [np.ravel(u) for u in updates.values()]
        return np.concatenate(values)
    if callable(built):
        return np.asarray([built(c) for c in (0, 1, 5, 20)], np.float64)
    return None  # a loss scale or a demo: checked at construction only


def test_every_public_callable_is_classified():
    names = {n for n in O.__all__ if inspect.isfunction(getattr(O, n))}
    names |= {f"schedules.{n}" for n in S.__all__ if inspect.isfunction(getattr(S, n))}
    assert names == set(CONSTRUCTORS) | set(NOT_CONSTRUCTORS)
    assert {"lion", "scale_by_lion", "adam", "sgd", "trace"} <= set(CONSTRUCTORS)
    assert ("lion", "b1", "str") in CASES and ("trace", "decay", "nan") in CASES


@pytest.mark.parametrize("constructor, argument, bad", CASES, ids=["-".join(c) for c in CASES])
def test_a_bad_number_is_named_at_construction(constructor, argument, bad):
    fn = CONSTRUCTORS[constructor]
    kwargs = {
        n: REQUIRED[n]
        for n, p in inspect.signature(fn).parameters.items()
        if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD
    }
    kwargs[argument] = BAD[bad]
    refused = (f"{argument}: got ", f"{argument}=")  # the error names the argument
    named = f"{argument}="  # a warning's form: "NAME=VALUE: accepted (as optax), but ..."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            built = fn(**kwargs)
        except (TypeError, ValueError) as err:
            assert any(form in str(err) for form in refused), f"{constructor}: {err}"
            return
    warned = [str(w.message) for w in caught if named in str(w.message)]
    assert bad != "str", f"{constructor}({argument}='0.5') was accepted"
    if bad in ("bool", "nan"):
        assert warned, f"{constructor}({argument}={BAD[bad]!r}) accepted without a warning"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        values = _exercise(built)  # accepted: no later failure
    if not warned and values is not None:
        assert np.all(np.isfinite(values)), f"{constructor}({argument}=-1.0): silent {values}"
