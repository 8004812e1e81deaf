# The README's two commands: `make up` (native platform up and verified) and `make test`.
# Everything they need is installed by the targets below, from package registries, cached under
# $${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform} with checksums.
SHELL := /bin/bash
PY := .venv/bin/python
# The platform's command line, as a team runs it (the console script of the package, installed editable here)
LAKEHOUSE := .venv/bin/lakehouse
STACK ?= native
# PULUMI=auto|project|installed: which Pulumi CLI every target runs (LAKEHOUSE_PULUMI; docs/toolchain.md). auto: a
# pulumi on PATH in the supported range with its Python plugins, else the project's build (built only then).
ifdef PULUMI
export LAKEHOUSE_PULUMI := $(PULUMI)
endif

.PHONY: bootstrap venv pulumi artifacts up down smoke verify test unit lint docs lock review bench dist \
	engine engine-stop engine-status lab-base lab-images lab-run lab-test prune

## bootstrap: project venv (hash-locked), the Pulumi CLI (yours, else built from the Go module proxy), the stack's artifacts
bootstrap: venv pulumi artifacts

venv:
	@scripts/venv.sh

## pulumi: the CLI the project runs, and why: yours where it fits, else the project's build (scripts/install-pulumi.sh)
pulumi: venv
	@$(LAKEHOUSE) pulumi

## artifacts: what the stack's target runs or mounts, for the pins of Pulumi.$(STACK).yaml (never fetched by `pulumi up`)
artifacts: venv
	@$(LAKEHOUSE) artifacts --stack $(STACK)

## up: the native platform on 127.0.0.1 via a real `pulumi up`, then endpoints, ownership, smoke check;
## STACK=lab: the lab on DOCKER_HOST's engine (else the project's own, `make engine`): the provider plugin checked,
## with lab.images: built the service images built where missing, then `pulumi up`, endpoints, smoke check;
## STACK=lab-offline: the same lab on images built here (no registry), without Polaris and Lakekeeper
up: bootstrap
	@$(LAKEHOUSE) up --stack $(STACK)

## down: destroy the native platform; no process is left running (data directories are kept);
## STACK=lab: every container, volume and the network, and the stack's state directory
down: venv
	@$(LAKEHOUSE) down --stack $(STACK)

smoke: venv
	@$(LAKEHOUSE) smoke --stack $(STACK)

## verify: the post-deploy probes against an isolated copy of the tests' native stack (its own ports and state, every
## probe, the disruptive ones too), JUnit in reports/; STACK=lab: against the deployed lab (make up STACK=lab first)
verify: bootstrap
	@if [ "$(STACK)" = native ]; then $(PY) -m tests.support.verify; else $(LAKEHOUSE) verify --stack $(STACK); fi

## test: the unit tier, then the e2e tier with the probes on an isolated stack
## (tests/e2e/test_probes_on_an_isolated_stack.py) and the tests needing a tool (lab ones skip without an engine),
## in two lanes (tests/conftest.py); -rP prints what each of those measured
test: bootstrap
	@$(MAKE) --no-print-directory unit
	$(PY) -m pytest tests -q -m "e2e or toolchain or lab" -n 2 --dist loadgroup -rP --durations=15

## unit: offline, no artifact cache, no Go, no Pulumi CLI (Pulumi mocks and plain functions)
# Two workers; a test module runs whole on one, the modules reading the cloud stack's variants all on the same one
# (their groups: tests/conftest.py), so no variant is evaluated twice.
# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE): pytest then keeps the test
# modules it rewrote, and each process imports compiled modules (about 4 s of the minute, on every run after the first).
unit: venv
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest tests -q -m "not e2e and not toolchain and not lab" -n 2 --dist loadgroup

## lint: ruff and mypy on the Python, the layers' import contracts (import-linter, pyproject [tool.importlinter]);
## when Go is present: gofmt, go vet and go test on tools/, actionlint on examples/
lint: venv
	$(PY) -m ruff check lakehouse_platform tests bench docs/hooks
	$(PY) -m mypy
	.venv/bin/lint-imports
	@if command -v go >/dev/null; then bash scripts/check-go.sh && bash scripts/check-workflows.sh; \
	else echo "==> go not on PATH: Go checks and actionlint skipped"; fi

## docs: the docs site (MkDocs, Material) built offline into .site/ with --strict: a broken link or anchor fails
docs: venv
	@# mkdocs is pinned to 1.6: the theme's banner about MkDocs 2.0 does not apply here
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --clean

## engine: a Docker engine of the project's own where `docker info` finds none (dockerd under the state dir);
## point a shell at it with: eval "$$(.venv/bin/lakehouse engine env)"
engine: venv
	@$(LAKEHOUSE) engine start

## engine-stop: stop that engine (its own pid) and undo what it changed (iptables, bridges, ip_forward)
engine-stop: venv
	@$(LAKEHOUSE) engine stop

engine-status: venv
	@$(LAKEHOUSE) engine status

# The lab stack the lab-* targets read: lab (upstream images) or lab-offline (built images, no registry needed)
LAB_STACK ?= lab
# Overrides of the stack's platform config, e.g. LAB_ARGS="--set lab.published_port_offset=20000"
LAB_ARGS ?=
DOCKER_ENV = eval "$$($(LAKEHOUSE) engine env)" &&

## lab-base: the stack's lab.base_image, debootstrapped from Debian's mirror when the engine lacks it (no registry)
lab-base: venv engine
	@$(DOCKER_ENV) $(LAKEHOUSE) lab --stack $(LAB_STACK) $(LAB_ARGS) base

## lab-images: the operations image and (lab.images: built) every service's image from the pinned artifacts
lab-images: venv engine
	@$(DOCKER_ENV) $(LAKEHOUSE) lab --stack $(LAB_STACK) $(LAB_ARGS) images build

## lab-run: the lab from the program with every resource made on the engine (no Pulumi provider needed), to
## healthy, the smoke check and the engines probe against it, then destroyed
lab-run: venv engine
	@$(DOCKER_ENV) $(LAKEHOUSE) lab --stack $(LAB_STACK) $(LAB_ARGS) run --probe

## lab-test: the tests that need a Docker engine (marker lab): the run above, broken configs turning it red,
## the probes' Docker seam. CI's lab stage, on built images without Polaris and Lakekeeper (no artifact)
lab-test: venv engine
	@$(DOCKER_ENV) $(PY) -m pytest tests -q -m lab -p no:randomly

## prune: free the Go module and build caches (gigabytes; every binary built from them stays cached, so the next
## `make up` builds nothing; a build of another pin starts cold)
prune:
	@bash scripts/prune.sh

## lock: regenerate requirements.lock (the whole tree) and runtime/image/operations.lock (the operations image) from
## pyproject.toml, hash-pinned, with uv from PyPI
lock:
	@bash scripts/lock.sh

review: venv
	$(LAKEHOUSE) review --stack lab
	$(LAKEHOUSE) review --stack native
	$(LAKEHOUSE) review --stack cloud

## dist: the package's wheel and sdist in dist/ (what a team pins; its version is the platform's), built offline
dist: venv
	@rm -rf dist && mkdir -p dist
	$(PY) -m pip wheel --no-deps --no-build-isolation --disable-pip-version-check -q -w dist .
	$(PY) -c "from setuptools import build_meta; print('dist/' + build_meta.build_sdist('dist'))"
	@rm -rf build lakehouse_platform.egg-info
	@ls -l dist

bench: bootstrap
	$(PY) bench/bench_lab.py
	$(PY) bench/bench_cloud.py
	$(PY) -W ignore bench/bench_policies.py lab cloud native
