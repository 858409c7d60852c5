#!/usr/bin/env bash
# A GPU run ready to fire (issue 26, part 4), for a fresh GPU machine with this repo checked out:
#
#   bash benchmarks/gpu_check.sh                # installs .[cuda,test] into .venv, then checks
#   bash benchmarks/gpu_check.sh --no-install   # uses $PYTHON (default python3) as it is
#   bash benchmarks/gpu_check.sh ... -- ARGS    # ARGS go to benchmarks/gpu_check.py
#
# 1. Install (skipped with --no-install): `python3 -m venv .venv` (or $GPU_CHECK_VENV) and
#    `pip install -e ".[cuda,test]"`: nothing the project does not declare (the `cuda` extra is
#    jax[cuda13]: NVIDIA driver >= 580). It needs the network and is not part of the time budget.
#    A machine without network needs --no-install and an environment that already has jax with
#    its CUDA plugin and the project's dependencies (this repo is put first on PYTHONPATH).
# 2. GPU or not: `jax.default_backend()`. Without a GPU it prints one line,
#    "gpu_check: no GPU (jax backend: cpu) -- nothing measured", and exits 0.
# 3. With a GPU, within GPU_CHECK_BUDGET_S seconds (default 300) in all:
#    the GPU-meaningful test subset (jitted numerics, device placement, search kernels, train
#    steps; tests with float32 oracles run at JAX_DEFAULT_MATMUL_PRECISION=highest, since TF32
#    matmuls are not float32), capped at GPU_CHECK_TEST_BUDGET_S (default 100) seconds, then
#    benchmarks/gpu_check.py (limits, charlm tokens/s and MFU, Adam GB/s, search q/s, the same
#    programs vs the CPU) for the rest of the budget. A cut run keeps what it printed.
#
# Exit status: 0 all done (or no GPU); 1 a test failed, or a step was cut by the budget or
# failed; 2 bad usage, the install failed or jax cannot be imported; 3 nvidia-smi lists a GPU but
# jax's backend is not a GPU (a CPU-only jaxlib: no CUDA plugin in this environment).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUDGET_S=${GPU_CHECK_BUDGET_S:-300}
TEST_BUDGET_S=${GPU_CHECK_TEST_BUDGET_S:-100}
TESTS=(
  tests/optim/test_adam.py tests/optim/test_chain.py tests/optim/test_clipping.py
  tests/optim/test_optax_dropin.py tests/optim/test_loss_scale.py
  tests/retrieval/test_topk_search.py tests/autodiff/test_func.py
  tests/models/test_transformer.py tests/models/test_attention.py
  tests/train/test_step.py tests/train/test_sharding.py
)

install=1
py_args=()
while (($#)); do
  case $1 in
    --no-install) install=0 ;;
    --) shift; py_args=("$@"); break ;;
    *) echo "gpu_check: unknown argument '$1' (expected --no-install or -- ARGS)" >&2; exit 2 ;;
  esac
  shift
done

if ((install)); then
  venv=${GPU_CHECK_VENV:-.venv}
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  if ! "$venv/bin/python" -m pip install -q -e ".[cuda,test]"; then
    echo "gpu_check: pip install -e '.[cuda,test]' into $venv failed; without network, run" \
      "with --no-install in an environment that has jax with its CUDA plugin" >&2
    exit 2
  fi
  PY=$venv/bin/python
else
  PY=${PYTHON:-python3}
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! backend=$("$PY" -c "import jax; print(jax.default_backend())" 2>"$err"); then
  echo "gpu_check: cannot import jax with $PY: $(tail -n 1 "$err")" >&2
  exit 2
fi
if [[ $backend != gpu && $backend != cuda && $backend != rocm ]]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "gpu_check: nvidia-smi lists a GPU but jax's backend is $backend (no CUDA plugin in" \
      "$PY's environment? pip install -e '.[cuda]') -- nothing measured"
    exit 3
  fi
  echo "gpu_check: no GPU (jax backend: $backend) -- nothing measured"
  exit 0
fi

# From here on: a GPU. Several test processes share it: no up-front allocation of its memory.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
SECONDS=0
status=0
echo "gpu_check: jax backend $backend; budget ${BUDGET_S} s (tests at most ${TEST_BUDGET_S} s)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

# JAX_PLATFORMS= (empty: every platform, the GPU first) overrides tests/conftest.py's CPU default.
rc=0
JAX_PLATFORMS= JAX_DEFAULT_MATMUL_PRECISION=highest timeout -k 10 "$TEST_BUDGET_S" \
  "$PY" -m pytest -q -n 8 "${TESTS[@]}" || rc=$?
case $rc in
  0) echo "gpu_check: test subset passed (${SECONDS} s)" ;;
  124 | 137) echo "gpu_check: test subset cut at ${TEST_BUDGET_S} s (its output so far is above)"; status=1 ;;
  *) echo "gpu_check: test subset FAILED (pytest exit $rc)"; status=1 ;;
esac

left=$((BUDGET_S - SECONDS))
if ((left < 30)); then
  echo "gpu_check: ${left} s of the ${BUDGET_S} s budget left: measurements skipped"
  exit 1
fi
rc=0
JAX_PLATFORMS= PYTHONUNBUFFERED=1 timeout -k 10 "$left" \
  "$PY" benchmarks/gpu_check.py ${py_args[@]+"${py_args[@]}"} || rc=$?
case $rc in
  0) ;;
  124 | 137) echo "gpu_check: measurements cut at the ${BUDGET_S} s budget (sections above are complete)"; status=1 ;;
  *) echo "gpu_check: measurements FAILED (exit $rc)"; status=1 ;;
esac
echo "gpu_check: done in ${SECONDS} s, exit status $status"
exit $status
