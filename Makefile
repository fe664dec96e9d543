# The two set-up commands of the README: `make local` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: local test lint bench install

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

# Install, then run localcluster (and, once it exists, the controller on it).
local: install
	$(BIN)/python -m localcluster serve --port 6443 --kubeconfig-out .cache/kubeconfig --runner scripted

# Install everything the tests need (kubectl included), lint, and run the tests.
test: install
	$(BIN)/python scripts/install_kubectl.py --dest $(VENV)/bin
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python -m bench
