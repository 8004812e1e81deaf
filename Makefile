# The README's two commands: `make up` (native platform up and verified) and `make test`.
# Everything they need is installed by the targets below, from package registries, cached under
# $${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform} with checksums.
SHELL := /bin/bash
PY := .venv/bin/python
STACK ?= native

.PHONY: bootstrap venv pulumi artifacts up down smoke verify test unit review bench

## bootstrap: project venv, Pulumi CLI + language host (Go module proxy), native artifacts
bootstrap: venv pulumi artifacts

venv:
	@scripts/venv.sh

pulumi:
	@bash scripts/install-pulumi.sh

artifacts: venv
	@$(PY) -m infra.targets.native.artifacts fetch

## up: the native platform on 127.0.0.1 via a real `pulumi up`, then endpoints, ownership, smoke check
up: bootstrap
	@$(PY) -m infra.targets.native.stack up --stack $(STACK)

## down: destroy the native platform; no process is left running (data directories are kept)
down: venv
	@$(PY) -m infra.targets.native.stack down --stack $(STACK)

smoke: venv
	@$(PY) -m infra.targets.native.stack smoke --stack $(STACK)

## verify: the post-deploy probes against a throwaway native stack (ports +21000), JUnit in reports/
verify: bootstrap
	$(PY) -m infra.targets.native.stack verify

## test: unit tests (mocks, spec, policies, review, process manager), the native end to end, the probes
test: bootstrap
	$(PY) -m pytest tests -q -p no:cacheprovider
	$(PY) -m infra.targets.native.stack verify

unit: venv
	$(PY) -m pytest tests -q -p no:cacheprovider --ignore=tests/e2e

review: venv
	$(PY) -m infra.review --stack lab
	$(PY) -m infra.review --stack native
	$(PY) -m infra.review --stack cloud

bench: bootstrap
	$(PY) bench/bench_lab.py
	$(PY) bench/bench_cloud.py
	$(PY) -W ignore bench/bench_policies.py lab cloud native
