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

# Install (kubectl too, for the README's kubectl commands), then run the controller on its embedded local
# cluster with the user guide's example. `make local APPLY=` serves for kubectl until Ctrl-C instead of
# applying a file; ARGS passes more flags: `make local ARGS="--port 7443 --logs"`.
APPLY ?= examples/generic-example.yaml
ARGS ?=
local: install $(BIN)/kubectl
	$(BIN)/genericjob-controller local $(if $(APPLY),--apply $(APPLY)) $(ARGS)

$(BIN)/kubectl: | $(BIN)/python
	$(BIN)/python scripts/install_kubectl.py --dest $(BIN)

# Install everything the tests need (kubectl included), lint, and run the tests.
test: install
	$(BIN)/python scripts/install_kubectl.py --dest $(BIN)
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
