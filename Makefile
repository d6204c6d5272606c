# gpu-extender developer entry points. `make demo` and `make test` work on a fresh machine with
# Python 3.11+ and Go 1.26+ (the control plane is built once from Go modules and cached in
# ~/.cache/gpu-extender; see hack/README.md).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: all venv controlplane helm kwok manifests check-deploy check-extras lint test test-unit test-e2e demo bench clean

all: test

# The virtualenv is rebuilt when pyproject.toml changes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,test,lint,bench]'
	touch $(STAMP)

venv: $(STAMP)

controlplane:
	bash hack/build-controlplane.sh >/dev/null

helm:
	bash hack/build-helm.sh >/dev/null

# kwok (fake nodes with a pod lifecycle) for the preemption e2e tests; cached by version.
kwok:
	bash hack/build-kwok.sh >/dev/null

# manifests/ is the plain rendering of the chart's default values (tests/deploy fails on drift).
manifests: $(STAMP) helm
	$(BIN)/python -m localcluster.helm manifests

# helm lint; every preset x both modes rendered and checked (probes, hardening, platform config
# through check-config); server-side dry run of each against the local control plane, RBAC
# included; then the default rendering installed, upgraded and rolled back for real there.
check-deploy: $(STAMP) helm controlplane
	$(BIN)/pytest -m deploy $(PYTEST_ARGS)

# The wheel with each extra ([serve], [agent], [webhook], [sim], none) in a fresh venv, each
# role's command started (tests/extras; a few minutes: one venv and install per role).
check-extras: $(STAMP)
	$(BIN)/pytest -m extras $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check extender localcluster tests benchmarks demo
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # the import contract in .importlinter

test-unit: $(STAMP)
	$(BIN)/pytest -m "not e2e and not deploy and not extras" $(PYTEST_ARGS)

test-e2e: $(STAMP) controlplane kwok
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

# Everything CI runs: lint, unit tests, end-to-end tests against the real control plane.
test: lint test-unit check-deploy check-extras test-e2e

demo: $(STAMP) controlplane
	$(BIN)/python -m demo

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_verbs.py
	$(BIN)/python benchmarks/bench_webhook.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
