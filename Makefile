# The two set-up commands of the README: `make local` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: local test lint bench install lock

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Everything from requirements-dev.lock (the extras local, test, bench and dev, pip itself and the build
# backend, each at a pinned version with PyPI's hashes), then the project alone: nothing is resolved here,
# so nothing unpinned is installed. The venv's bundled pip only reads the lock; the lock's pip replaces it.
install: $(BIN)/python
	$(BIN)/python -m pip install -q --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .

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

# Regenerate requirements.lock (the image's pinned, hashed dependencies) and requirements-dev.lock (the same
# pins plus the extras', for `make install`) from pyproject.toml. Against PyPI itself, so that the hashes
# are PyPI's; the build backend is pinned too (--all-build-deps), and pip and pip-tools (--allow-unsafe).
# pip-compile keeps a lock's existing pins: delete the lock (or pass --upgrade) to move them.
COMPILE := PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= $(BIN)/pip-compile --quiet --generate-hashes --strip-extras \
	--all-build-deps --allow-unsafe --no-emit-index-url --no-emit-find-links
lock: install
	$(COMPILE) --output-file=requirements.lock pyproject.toml
	$(COMPILE) --extra local --extra test --extra bench --extra dev --constraint requirements.lock \
		--output-file=requirements-dev.lock pyproject.toml
