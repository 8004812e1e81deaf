# The two commands of the README: `make up` (native platform up and verified) and `make test`.
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: venv test unit review bench

venv:
	@scripts/venv.sh

## unit: spec, lab/cloud programs under Pulumi mocks, policies, review, local-service provider
unit: venv
	$(PY) -m pytest tests -q -p no:cacheprovider

test: unit

review: venv
	$(PY) -m infra.review --stack lab
	$(PY) -m infra.review --stack native
	$(PY) -m infra.review --stack cloud

bench: venv
	$(PY) bench/bench_lab.py
