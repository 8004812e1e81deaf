# The README's two commands: `make up` (native platform up and verified) and `make test`.
# Everything they need is installed by the targets below, from package registries, cached under
# $${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform} with checksums.
SHELL := /bin/bash
PY := .venv/bin/python
STACK ?= native

.PHONY: bootstrap venv pulumi artifacts up down smoke verify test unit lint docs lock review bench

## bootstrap: project venv (hash-locked), Pulumi CLI + language host (Go module proxy), the stack's artifacts
bootstrap: venv pulumi artifacts

venv:
	@scripts/venv.sh

pulumi:
	@bash scripts/install-pulumi.sh

## artifacts: what the stack's target runs or mounts, for the pins of Pulumi.$(STACK).yaml (never fetched by `pulumi up`)
artifacts: venv
	@$(PY) -m infra.control artifacts --stack $(STACK)

## up: the native platform on 127.0.0.1 via a real `pulumi up`, then endpoints, ownership, smoke check
up: bootstrap
	@$(PY) -m infra.control up --stack $(STACK)

## down: destroy the native platform; no process is left running (data directories are kept)
down: venv
	@$(PY) -m infra.control down --stack $(STACK)

smoke: venv
	@$(PY) -m infra.control smoke --stack $(STACK)

## verify: the post-deploy probes against an isolated native stack (its own ports and state), JUnit in reports/
verify: bootstrap
	$(PY) -m infra.control verify

## test: every unit test, the toolchain and end-to-end tests, then the probes on an isolated stack
test: bootstrap
	$(PY) -m pytest tests -q
	$(PY) -m infra.control verify

## unit: offline, no artifact cache, no Go, no Pulumi CLI (Pulumi mocks and plain functions)
unit: venv
	$(PY) -m pytest tests -q -m "not e2e and not toolchain" -n 2 --dist loadfile

## lint: ruff and mypy on the Python; when Go is present: gofmt, go vet and go test on tools/, actionlint on examples/
lint: venv
	$(PY) -m ruff check infra policies tests platform_tests bench docs/hooks
	$(PY) -m mypy
	@if command -v go >/dev/null; then bash scripts/check-go.sh && bash scripts/check-workflows.sh; \
	else echo "==> go not on PATH: Go checks and actionlint skipped"; fi

## docs: the docs site (MkDocs, Material) built offline into .site/ with --strict: a broken link or anchor fails
docs: venv
	@# mkdocs is pinned to 1.6: the theme's banner about MkDocs 2.0 does not apply here
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --clean

## lock: regenerate requirements.lock (the whole tree, hash-pinned) from pyproject.toml, with uv from PyPI
lock:
	@bash scripts/lock.sh

review: venv
	$(PY) -m infra.review --stack lab
	$(PY) -m infra.review --stack native
	$(PY) -m infra.review --stack cloud

bench: bootstrap
	$(PY) bench/bench_lab.py
	$(PY) bench/bench_cloud.py
	$(PY) -W ignore bench/bench_policies.py lab cloud native
