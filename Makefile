# Two entry points for a fresh machine with Python 3.11: `make demo` and `make test`.
# Each creates .venv and installs what it needs by itself.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-quick test-wheel test-typescript test-load docs lint typecheck check clean ui-browser citus ui-screenshots test-fuzz bench-interfaces bench-isolation fuzz-store reliability

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	@# Earlier builds of this project were installed under the name oracleagentmemory, which is
	@# Oracle's distribution on PyPI: drop such an install so the import check does not refuse.
	$(BIN)/python -m pip uninstall --quiet --yes oracleagentmemory >/dev/null 2>&1 || true
	$(BIN)/python -m pip install --quiet -e ".[local-embeddings,postgres,mcp,server,dev,langgraph,openai-agents,langchain,docs]"
	@# hnswlib (extra [ann]) compiles from source: a C++ compiler is installed if missing and
	@# possible (CI runs as root on Debian); without one the approximate index and its tests
	@# are skipped, and this says so.
	$(BIN)/python -m pip install --quiet -e ".[ann]" || { \
		command -v g++ >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq g++; } >/dev/null 2>&1; \
		$(BIN)/python -m pip install --quiet -e ".[ann]"; } || \
		echo "NOTE: hnswlib could not be built (no C++ compiler?): the approximate index and its tests are skipped"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP) ui-browser citus test-wheel test-typescript docs
	$(BIN)/ruff check src tests examples bench reliability tools
	$(BIN)/mypy
	$(BIN)/mypy --strict tests/typing_samples  # a user's code written against the reference types
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not local_llm"; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc
	# The store contract and the client's tests again, on a Citus coordinator + 2 workers the
	# tests start (the store distributed by user; they skip, saying why, without Citus).
	OAM_TEST_BACKENDS=citus $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_store_contract.py \
	  tests/test_client_behaviour.py tests/test_job_leases.py tests/test_validity.py tests/test_memory_history.py \
	  tests/test_write_locks.py tests/test_write_conflicts.py; \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

# Unit and contract tests on SQLite only, without the tests marked slow (servers in
# subprocesses, fuzzing, loads) and without PostgreSQL: the quick loop while you work.
test-quick: $(STAMP)
	OAM_TEST_BACKENDS=sqlite $(BIN)/python -m pytest -q -p no:cacheprovider -m "not local_llm and not slow"; \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

# The documentation site (mkdocs.yml, docs/) into site/; any warning fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# What a new user gets from PyPI, from a built wheel in a fresh venv (never the source tree):
# `pip install <wheel>` runs the quick start, `pip install "<wheel>[server]"` runs `oam serve`.
test-wheel: | $(BIN)/python
	bash tools/wheel_smoke.sh $(PYTHON)

# The TypeScript client (clients/typescript): its locked dev dependencies from the npm registry
# (npm ci), a build, and its Node tests (node:test) against a real `oam serve` of this venv.
test-typescript: $(STAMP)
	@command -v npm >/dev/null 2>&1 || { echo "need node 18+ and npm on PATH for the TypeScript client's tests"; exit 1; }
	cd clients/typescript && npm ci --no-audit --no-fund && OAM_BIN="$(CURDIR)/$(BIN)/oam" npm test

# The background-extraction load tests (1,000 messages over 20 threads) on every engine;
# `make test` runs them on SQLite only.
test-load: $(STAMP)
	OAM_LOAD_BACKENDS=sqlite,postgres $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/test_extraction_background.py -k load

# Headless Chromium for the /ui browser test (Debian's package; CI runs as root). Best effort:
# without it that one test is skipped with its reason.
ui-browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
	      >/dev/null) || echo "chromium could not be installed: the /ui browser test will skip"; \
	  else echo "chromium is missing (run as root: apt-get install chromium): the /ui browser test will skip"; fi; }

# Citus from the vendored source (../shared/vendor, or env CITUS_SOURCE) against pgserver's
# PostgreSQL, built once into ~/.cache/recallwell-test (tools/citus_cluster.py; about 2-4 min
# on 2 cores) for the cluster tests. gcc is installed if missing and possible (CI runs as root
# on Debian); without a C compiler the Citus tests skip with that reason.
citus: $(STAMP)
	@command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev \
	      >/dev/null) || echo "gcc could not be installed: the Citus tests will skip"; \
	  else echo "no C compiler (run as root: apt-get install gcc): the Citus tests will skip"; fi; }
	@if ! $(BIN)/python -c "import sys; sys.path.insert(0, 'tools'); import citus_cluster as c; c.vendor_tarball()" 2>/dev/null; then \
	  echo "Citus's source is not in ../shared/vendor (nor CITUS_SOURCE): the Citus tests will skip"; \
	elif command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1; then \
	  $(BIN)/python tools/citus_cluster.py build; fi

# Refresh the /ui screenshots shown by docs/guides/memory-browser.md.
ui-screenshots: $(STAMP) ui-browser
	OAM_UI_SCREENSHOTS=docs/images/ui $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_ui_browser.py

# The OpenAPI fuzz with many more examples per operation than `make test` runs (15).
test-fuzz: $(STAMP)
	OAM_FUZZ_EXAMPLES=200 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_rest_fuzz.py

# The store/client/thread fuzz suite's full count: at least 5,000 generated calls per engine
# (make test runs 1,000 per engine).
fuzz-store: $(STAMP)
	OAM_FUZZ_CALLS=5000 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_fuzz.py -s

# The crash suite: kill -9 during plain adds, batches, linked adds and add_messages (60 kills
# per engine), then reopen and check every acknowledged write. Not part of make test.
reliability: $(STAMP) citus
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
.PHONY: bench bench-quick bench-side-by-side bench-llm bench-load
BENCH_INSTALL = $(BIN)/python -m pip install -q -e ".[bench,bench-peers]" || { \
	echo "bench-peers extra failed to install: peers will be skipped"; \
	$(BIN)/python -m pip install -q -e ".[bench]"; }

bench: $(STAMP) citus
	$(BENCH_INSTALL)
	$(BIN)/python -m bench full
	$(BIN)/python -m bench embedders
	$(BIN)/python -m bench cold-start
	$(BIN)/python -m bench postgres
	$(BIN)/python -m bench row-security
	$(BIN)/python -m bench replica
	$(BIN)/python -m bench citus
	$(BIN)/python -m bench memory-history
	$(BIN)/python -m bench forget
	$(BIN)/python -m bench memory-peers
	$(BIN)/python -m bench memory-peers --embed-server cached --n 3000 --users 10
	$(BIN)/python -m bench hybrid-messages
	$(BIN)/python -m bench langgraph-cpu --rounds 5

# Agent-memory peers beside ours (bench/memory_peers.py): mem0 OSS and LangGraph's stores, each
# in its own virtualenv under bench/.peer-venvs/ (pinned: bench/peer_envs/*.txt), on SQLite,
# in memory and on PostgreSQL (pgserver), given the same vectors and then each embedding through
# one local OpenAI-wire server of our bundled e5; then our LangGraph adapter's CPU against the client's.
.PHONY: bench-memory-peers
bench-memory-peers: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench memory-peers $(BENCH_PEERS_ARGS)
	$(BIN)/python -m bench memory-peers --embed-server cached --n 3000 --users 10 $(BENCH_PEERS_ARGS)
	$(BIN)/python -m bench langgraph-cpu --rounds 5

# PostgreSQL beside SQLite and the bare-psycopg floor: writers, bulk, every search shape at 100k
# (bench/postgres.py; BENCH_PG_ARGS="--search-n 1000000" for the million-record rows).
.PHONY: bench-postgres
bench-postgres: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench postgres $(BENCH_PG_ARGS)

bench-quick: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench quick

# The quick speed profile of this tree and of REV, interleaved in one run (bench/side_by_side.py).
REV ?= HEAD~1
bench-side-by-side: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench side-by-side $(REV)

# Memory extraction on one LoCoMo conversation through an LLM (bench/llm.py): by default the
# offline model of the [local-llm] extra (installed by `make demo-llm`); another model with
# `make bench-llm BENCH_LLM_ARGS="--api-base http://host:8000/v1 --model NAME"`.
bench-llm: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[bench]"
	$(BIN)/python -m bench llm $(BENCH_LLM_ARGS)

# REST and MCP search overhead against the in-process call at 100k records.
bench-interfaces: $(STAMP)
	$(BIN)/python -m bench.interfaces

# One user's REST search latency alone and while another user sends the heaviest requests
# the limits allow (the largest filter, the largest message); then what a one-item page of a
# 20,000-message thread costs (bench/paging.py).
bench-isolation: $(STAMP)
	$(BIN)/python -m bench.isolation
	$(BIN)/python -m bench.paging

# The offline LLM (extra [local-llm]): llama-cpp-python has no binary wheel on PyPI, so a
# portable wheel (AVX2/FMA/F16C; no -march=native, no AMX, which crashes on VMs that advertise
# it) is built once into .whl/ (about 20-30 minutes on 2 cores) and reused by later installs.
.PHONY: demo-llm test-llm llama-wheel
LLAMA_CPP_VERSION := 0.3.36
WHEELS := .whl
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLM_STAMP := $(VENV)/.installed-local-llm

llama-wheel: | $(BIN)/python
	@ls $(WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1 || { \
		echo "building llama-cpp-python $(LLAMA_CPP_VERSION) from source into $(WHEELS)/ (20-30 min on 2 cores)"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" nice -n 10 $(BIN)/python -m pip wheel --no-cache-dir \
			--no-deps llama-cpp-python==$(LLAMA_CPP_VERSION) -w $(WHEELS); }

$(LLM_STAMP): pyproject.toml $(STAMP)
	$(MAKE) llama-wheel
	$(BIN)/python -m pip install --quiet --find-links $(WHEELS) -e ".[local-llm]"
	@touch $(LLM_STAMP)

demo-llm: $(LLM_STAMP)
	$(BIN)/python examples/llm_demo.py

# Automatic links on the 50 hand-written pairs (bench/link_pairs.json): the test double's
# oracle, then the offline model (bench/results/links-*.md).
.PHONY: bench-links
bench-links: $(LLM_STAMP)
	$(BIN)/python -m bench links --llm oracle
	$(BIN)/python -m bench links --llm local

# Real-model tests (marked local_llm), bounded to 15 minutes.
test-llm: $(LLM_STAMP)
	timeout 900 $(BIN)/python -m pytest -q -p no:cacheprovider -m local_llm -s

# Many processes on one store: 4 processes x 4 writer threads (+ readers) for 30 s on SQLite
# and on PostgreSQL (pgserver), and the change-log catch-up rows. Results: bench/results/load.*
bench-load: $(STAMP)
	$(BENCH_INSTALL)
	$(BIN)/python -m bench load
