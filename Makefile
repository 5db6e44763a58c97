# Two entry points for a fresh machine with Python 3.11: `make demo` and `make test`.
# Each creates .venv and installs what it needs by itself.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck check clean fuzz reliability

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[local-embeddings,postgres,dev]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/ruff check src tests examples bench reliability
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

# The fuzz suite's full count: at least 5,000 generated calls per engine (make test runs 1,000).
fuzz: $(STAMP)
	OAM_FUZZ_CALLS=5000 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_fuzz.py -s

# The crash suite: kill -9 during plain adds, batches, linked adds and add_messages (60 kills
# per engine), then reopen and check every acknowledged write. Not part of make test.
reliability: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider reliability -s

lint: $(STAMP)
	$(BIN)/ruff check src tests examples
	$(BIN)/ruff format --check src tests examples

typecheck: $(STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

# Benchmarks (bench/): speed against the numpy floor and embedded peers, LoCoMo retrieval
# quality. Results: bench/results/<name>.md, .json and .png. Peers are optional: if the
# bench-peers extra cannot install, they are skipped with a printed reason.
.PHONY: bench bench-quick bench-load
BENCH_INSTALL = $(BIN)/python -m pip install -q -e ".[bench,bench-peers]" || { \
	echo "bench-peers extra failed to install: peers will be skipped"; \
	$(BIN)/python -m pip install -q -e ".[bench]"; }

bench: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench full

bench-quick: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench quick

# Many processes on one store: 4 processes x 4 writer threads (+ readers) for 30 s on SQLite
# and on PostgreSQL (pgserver), and the change-log catch-up rows. Results: bench/results/load.*
bench-load: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench load
