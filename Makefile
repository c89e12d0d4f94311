# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 5000
# Two stamps: `make run` installs what running needs (the app and its dependencies: about 30 s on a fresh
# clone); the test tools (pytest, ruff, Playwright, Schemathesis, gunicorn) come with the first `make test`.
STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test

# Python's default: keep compiled bytecode. Where the environment turns it off, every interpreter the suite
# starts (`console run` and its processes, each CLI call, the worker) compiled all of console/ again: the CLI
# tests took 103 s instead of 88 s.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test lint format install browser-deps bench-deps test-fast coverage worker bench clean

# Installs go through uv (itself installed by pip into the venv), with pip as the fallback where uv cannot reach
# an index. On a fresh clone uv installed the app and its test tools in 13 s where pip took 28 s.
# --compile-bytecode: the modules are compiled once here, on both cores. Left uncompiled, each of the suite's
# four workers compiled what it imported at the same moment (a cold `pytest --collect-only` took 17.4 s against
# 5.9 s warm): ~45 s of CPU in the first run of a fresh clone, CI's only run.
UV := $(BIN)/uv
define venv_install
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(BIN)/pip install --quiet --disable-pip-version-check "uv>=0.5,<1" || true
	UV_LINK_MODE=copy $(UV) pip install --python $(BIN)/python --quiet --compile-bytecode -e "$(1)" \
		|| $(BIN)/pip install --quiet --disable-pip-version-check -e "$(1)"
endef

$(STAMP): pyproject.toml
	$(call venv_install,.)
	touch $(STAMP)

# One install for the app with its test tools.
$(TEST_STAMP): pyproject.toml
	$(call venv_install,.[test])
	touch $(STAMP) $(TEST_STAMP)

install: $(TEST_STAMP) ## Create .venv and install the app with its test tools.

run: $(STAMP) ## Upgrade the SQLite database, seed it and serve on http://$(HOST):$(PORT).
	HOST=$(HOST) PORT=$(PORT) $(BIN)/console run --host $(HOST) --port $(PORT)

worker: $(STAMP) ## Run a separate delivery/scheduler worker process.
	$(BIN)/console worker

# chromium-headless-shell: the headless-only build tests/browser/conftest.py prefers (it starts quicker).
browser-deps: ## Install Debian's Chromium (and its headless shell) for the browser tests, if missing.
	@{ command -v chromium >/dev/null 2>&1 && command -v chromium-headless-shell >/dev/null 2>&1; } || { \
		(apt-get update -q && apt-get install -y -q chromium chromium-headless-shell) >/dev/null \
		|| echo "warning: could not install chromium; browser tests will be skipped"; }

lint: $(TEST_STAMP) ## Ruff lint and format check.
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(TEST_STAMP) ## Apply ruff's formatting and safe fixes.
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The suite runs on $(TEST_WORKERS) pytest-xdist worker processes (tests/conftest.py gives each its own
# PostgreSQL database and Redis db number); `make test TEST_WORKERS=0` runs it in one process. Four on 2 cores:
# much of the suite waits (on subprocesses starting, Chromium, polls), and a quiet run took 263 s on 4 workers
# against 318 s on 2 (docs/testing.md).
TEST_WORKERS ?= 4
PYTEST_PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
# The suite's pytest plugins, loaded by name with entry-point autoloading off: with it on, pytest also rewrote
# the asserts of every module of each plugin's distribution it imported (all of hypothesis and schemathesis,
# ~360 modules), and collection took 17.3 s a process instead of 11.7 s, in each worker of a fresh clone.
# (`make coverage` keeps autoloading: pytest-cov loaded by name imports xdist before it can be rewritten.)
# xdist first: rerunfailures imports it, and a plugin imported before it is named cannot be rewritten (an error).
PYTEST := PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(BIN)/pytest -p xdist.plugin -p pytest_rerunfailures \
	-p _hypothesis_pytestplugin -p schemathesis.pytest.plugin

# One pytest run for everything, browser tests included: loadgroup keeps a browser module's tests (and its one
# live server) on one worker, and the workers balance Chromium's waits against the rest. A browser test that
# fails is run once more (BROWSER_RERUNS, read by tests/browser/conftest.py), as Playwright's own runner retries
# on CI; a test that needed its retry is listed in the summary ("rerun"), one that fails twice fails the run.
BROWSER_RERUNS ?= 1
test: $(TEST_STAMP) browser-deps lint ## Lint, then the whole suite, browser tests included, on 4 xdist workers.
	BROWSER_RERUNS=$(BROWSER_RERUNS) $(PYTEST) -q $(PYTEST_PARALLEL) -r R

test-fast: $(TEST_STAMP) ## The suite without the browser tests (on 4 xdist workers).
	$(PYTEST) -q $(PYTEST_PARALLEL) -m "not browser"

coverage: $(TEST_STAMP) ## Line and branch coverage of console/ over the suite without the browser tests.
	$(BIN)/pytest -q $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadgroup) \
		-m "not browser" --cov=console --cov-branch --cov-report=term:skip-covered

bench-deps: ## Install Debian's wrk (bench.api's load generator) and valgrind (bench.api_instructions), if missing.
	@command -v wrk >/dev/null 2>&1 && command -v valgrind >/dev/null 2>&1 || { \
		(apt-get update -q && apt-get install -y -q wrk valgrind) >/dev/null \
		|| echo "warning: could not install wrk or valgrind; the benchmarks that need them will be skipped"; }

bench: $(TEST_STAMP) bench-deps ## Run the benchmarks under bench/ (see BENCHMARKS.md).
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
