# chat_app: the two commands are `make run` and `make test`.
#
# Everything needed is installed from the package registries (PyPI, npm, Debian),
# so both commands work on a fresh clone: Python 3.11, Node 20 + npm, no bun, no browser.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
REFLEX := $(VENV)/bin/reflex

# bun ships through npm; Reflex cannot download it itself without internet access.
BUN_DIR := tools/bun
BUN_BIN := $(CURDIR)/$(BUN_DIR)/node_modules/.bin
BUN_STAMP := $(BUN_DIR)/node_modules/.installed
BUN_MIN := 1.4.4

CHROMIUM := /usr/bin/chromium
INTEROP_JS := tests/interop/js

export PATH := $(BUN_BIN):$(PATH)
export REFLEX_USE_SYSTEM_BUN := 1
export REFLEX_TELEMETRY_ENABLED := false
export REFLEX_CHECK_LATEST_VERSION := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export NPM_CONFIG_UPDATE_NOTIFIER := false

.PHONY: help run test lint bench setup setup-test bun chromium interop-js clean

help:
	@echo "make run    start the app on http://localhost:$${PORT:-8000} (PORT=… to change)"
	@echo "make test   install test tools and a headless Chromium, then run pytest over tests/ (2 processes)"
	@echo "make lint   ruff over chat_app, tests and benchmarks; mypy over chat_app and tests"
	@echo "make bench  benchmarks side by side with TanStack AI -> docs/benchmarks.md (~14 min)"
	@echo "make clean  remove build output (.web, .states); keeps .venv"

# --- Python -----------------------------------------------------------------

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-app: requirements.txt | $(PY)
	$(PIP) install -r requirements.txt
	touch $@

$(VENV)/.installed-test: requirements.txt requirements-test.txt requirements-models.txt | $(PY)
	$(PIP) install -r requirements-test.txt
	touch $@

$(VENV)/.installed-bench: requirements-bench.txt requirements-test.txt requirements.txt | $(PY)
	$(PIP) install -r requirements-bench.txt
	touch $@

setup: $(VENV)/.installed-app bun
setup-test: $(VENV)/.installed-test bun chromium interop-js

# --- bun --------------------------------------------------------------------
# Use a bun >= $(BUN_MIN) found on PATH; otherwise install the pinned one from npm
# into $(BUN_DIR). Once installed there it is kept in step with its lockfile.

$(BUN_STAMP): $(BUN_DIR)/package.json $(BUN_DIR)/package-lock.json
	npm ci --prefix $(BUN_DIR) --no-audit --no-fund
	touch $@

bun:
	@if [ ! -e $(BUN_DIR)/node_modules ] && v="$$(bun --version 2>/dev/null)" \
	    && printf '%s\n' "$(BUN_MIN)" "$$v" | sort -V -C; then \
	  echo "Using bun $$v from $$(command -v bun)"; \
	else \
	  $(MAKE) --no-print-directory $(BUN_STAMP); \
	fi

# --- browser, Redis and PostgreSQL for the tests ----------------------------------
# Debian's postgresql package puts initdb and pg_ctl in /usr/lib/postgresql/<version>/bin;
# the tests start a throwaway server from there (tests/pg_server.py).

chromium:
	@if [ -x $(CHROMIUM) ] && command -v redis-server >/dev/null \
	    && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing Debian chromium, chromium-driver, redis-server and postgresql (for the tests)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update && apt-get install -y chromium chromium-driver redis-server postgresql; \
	  [ -x $(CHROMIUM) ] || { echo "apt-get finished but $(CHROMIUM) is still missing" >&2; exit 1; }; \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	    || { echo "apt-get finished but /usr/lib/postgresql/*/bin/initdb is still missing" >&2; exit 1; }; \
	else \
	  echo "The tests need $(CHROMIUM), redis-server and PostgreSQL's server binaries. Install them first, e.g.:" >&2; \
	  echo "    sudo apt-get update && sudo apt-get install -y chromium chromium-driver redis-server postgresql" >&2; \
	  echo "(Do not run 'playwright install': the tests use the system Chromium.)" >&2; \
	  exit 1; \
	fi

# --- JS clients for the interop tests (only once that folder has a lockfile) ----

ifneq ($(wildcard $(INTEROP_JS)/package-lock.json),)
$(INTEROP_JS)/node_modules/.installed: $(INTEROP_JS)/package.json $(INTEROP_JS)/package-lock.json
	npm ci --prefix $(INTEROP_JS) --no-audit --no-fund
	touch $@
interop-js: $(INTEROP_JS)/node_modules/.installed
else
interop-js:
	@true
endif

# --- commands -----------------------------------------------------------------

# This machine only unless CHAT_APP_HOST says otherwise: the demo sign-in lets anyone be
# anyone. (Not HOST: some shells set that to the machine's name.)
run: setup
	$(PY) -m chat_app.launch run --env prod --single-port --backend-host $${CHAT_APP_HOST:-127.0.0.1} \
		--backend-port $${PORT:-8000}

# Two test processes: the browser tests mostly wait on the app and Chromium, so the other
# process's tests fill the second core (20:33 in one process, 13:35 in two, long ago). Three
# ran about a minute faster here (16:17 and 15:59 against 17:36), but the contention made a
# browser test's click land as its form moved (1 failure in 2 runs): not worth the minute.
# The slowest tests are listed at the end, to see where the budget of 20 minutes goes.
TEST_PROCESSES ?= 2

test: setup-test
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist worksteal --durations=15

bench: setup-test $(VENV)/.installed-bench
	$(PY) -m benchmarks

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check chat_app tests benchmarks rxconfig.py
	$(VENV)/bin/mypy chat_app tests

clean:
	rm -rf .web .states
