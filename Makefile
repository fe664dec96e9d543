# The two set-up commands of the README: `make local` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: local test lint bench install lock

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e '.[local,test,bench]'

# Install, then run the controller on its embedded local cluster with the user guide's example.
# Leave out --apply (`.venv/bin/genericjob-controller local`) to keep it serving for kubectl.
local: install
	$(BIN)/genericjob-controller local --apply examples/generic-example.yaml

# Install everything the tests need (kubectl included), lint, and run the tests.
test: install
	$(BIN)/python scripts/install_kubectl.py --dest $(VENV)/bin
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/bench_localcluster.py
	$(BIN)/python bench/bench_workqueue.py
	$(BIN)/python bench/bench_informers.py
	$(BIN)/python bench/bench_reconcile.py

# Regenerate requirements.lock (the image's pinned, hashed dependencies) from pyproject.toml. Against
# PyPI itself, so that the hashes are PyPI's; the build backend is pinned too (--all-build-deps).
lock: $(BIN)/python
	$(BIN)/pip install -q pip-tools
	PIP_CONFIG_FILE=/dev/null $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --all-build-deps \
		--allow-unsafe --no-emit-index-url --no-emit-find-links --output-file=requirements.lock pyproject.toml
