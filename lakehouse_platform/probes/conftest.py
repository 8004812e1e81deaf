"""The post-deploy probe suite: options, the stack fixture, layer markers, ordering and the summary table.

Run against a deployed stack of a Pulumi project (outputs read with the project's Pulumi CLI)::

    lakehouse verify --stack dev --junit reports/probes.xml

or, in this repository, against an outputs file (``pulumi stack output --json --show-secrets > outputs.json``)::

    .venv/bin/pytest lakehouse_platform/probes --outputs outputs.json

One layer's probes only: ``-m catalog`` (markers: storage, catalog, compute, governance, orchestration,
observability, recovery). Each probe records a figure; the table printed at the end (and the JUnit
XML's ``<property name="figure">``) carries it.

Safe and disruptive (``support/selection.py``): every probe is marked ``safe`` or ``disruptive("why")``. The
disruptive ones run only against a stack marked disposable (the ``disposable`` output) or with
``--disruptive=<stack>`` naming the outputs' stack; elsewhere they skip, saying why. ``-m safe`` selects the safe set.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from lakehouse_platform.probes.support import report, selection
from lakehouse_platform.probes.support.stack import OutputsError, Stack, read_outputs_file, read_stack_outputs

LAYERS = ("storage", "catalog", "compute", "governance", "orchestration", "observability", "recovery")

# Probe families in the order they run: the restart and the recovery drill late (they interrupt the
# catalog; the drill loses its database twice), memory last (resident memory *after* the probes).
REQUIRED_OUTPUTS = ("target", "endpoints", "profiles", "version_manifest", "ownership")
_RESULTS: list = [None]  # the session's results (logreport has no config argument)

MODULE_ORDER = (
    "test_engines", "test_governance", "test_governance_matrix", "test_flink", "test_catalog_concurrency",
    "test_storage", "test_lifecycle", "test_signals_read", "test_cdc", "test_restart", "test_faults", "test_maintenance",
    "test_recovery", "test_signals", "test_manifest", "test_memory",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("platform", "lakehouse platform probes")
    group.addoption("--stack", default=os.environ.get("PLATFORM_STACK"),
                    help="Pulumi stack to probe (reads `pulumi stack output --json --show-secrets --stack X`)")
    group.addoption("--outputs", default=os.environ.get("PLATFORM_OUTPUTS"),
                    help="stack outputs JSON file (instead of --stack)")
    group.addoption("--restart-command", default=os.environ.get("PLATFORM_RESTART_COMMAND"),
                    help="command restarting a service ({service} and {stack} are substituted); default: "
                         "lakehouse restart {service} --stack {stack} on native")
    group.addoption("--commit-seconds", type=float, default=float(os.environ.get("PLATFORM_COMMIT_SECONDS", 30)),
                    help="duration of the concurrent-commit probe (default 30 s)")
    group.addoption("--keep-tables", action="store_true",
                    help="keep the tables the probes created (default: purge them at the end)")
    group.addoption("--disruptive", metavar="STACK", default=None,
                    help="run the disruptive probes (faults, restarts, the recovery drill, commit storms, maintenance "
                         "runs) against STACK although it is not marked disposable; refused unless STACK is the stack "
                         "the outputs are of. Without it they run only on a disposable stack")
    group.addoption("--strict-engines", action="store_true",
                    help="fail on engine capability gaps the target declares (e.g. DuckDB 1.4 cannot INSERT "
                         "into a partitioned table) instead of reporting them as deviations")


def pytest_configure(config: pytest.Config) -> None:
    for layer in LAYERS:
        config.addinivalue_line("markers", f"{layer}: a probe of the {layer} layer (select with -m {layer})")
    config.addinivalue_line("markers", "layer(name): the layer a probe belongs to (alternative spelling)")
    config._platform_results = report.Results()  # type: ignore[attr-defined]
    _RESULTS[:] = [config._platform_results]  # type: ignore[attr-defined]
    config._platform_started = time.monotonic()  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the families in MODULE_ORDER; a ``layer("x")`` mark also gets the ``x`` marker (for -m)."""
    for item in items:
        for mark in item.iter_markers("layer"):
            if mark.args:
                item.add_marker(getattr(pytest.mark, mark.args[0]))

    def rank(item: pytest.Item) -> int:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        return MODULE_ORDER.index(module) if module in MODULE_ORDER else len(MODULE_ORDER)

    items.sort(key=rank)  # stable: order inside a module is kept


def item_layers(item: pytest.Item) -> list[str]:
    found: list[str] = []
    for mark in item.iter_markers():
        name = mark.args[0] if mark.name == "layer" and mark.args else mark.name
        if name in LAYERS and name not in found:
            found.append(name)
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    item.config._platform_results.layers[item.nodeid] = item_layers(item)  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    started = time.monotonic()
    yield
    results = item.config._platform_results  # type: ignore[attr-defined]
    results.seconds[item.nodeid] = time.monotonic() - started


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    results = _RESULTS[0]
    results.record(report)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A disruptive probe skips, before any of its fixtures runs, unless this stack may be disturbed (decided at the
    first probe, so a refused --disruptive ends the run before anything ran)."""
    allowed = _disruption(item.config)
    reason = selection.skip_reason(selection.kind_of(item.iter_markers()), allowed)
    if reason:
        pytest.skip(reason)


def _disruption(config: pytest.Config) -> selection.Disruption:
    """What this run may do to the stack (decided once, from the outputs and --disruptive; a refused flag ends the
    run before any probe)."""
    found = getattr(config, "_platform_disruption", None)
    if found is None:
        try:
            found = selection.disruption(_stack(config).outputs, config.getoption("--disruptive"))
        except selection.RefusedFlag as exc:
            pytest.exit(str(exc), 4)
        config._platform_disruption = found  # type: ignore[attr-defined]
    return found


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    results = config._platform_results  # type: ignore[attr-defined]
    wall = time.monotonic() - config._platform_started  # type: ignore[attr-defined]
    report.print_summary(terminalreporter, results, wall)
    decided = getattr(config, "_platform_disruption", None)
    if decided is not None:
        terminalreporter.write_line(f"disruptive probes {'ran' if decided.allowed else 'skipped'}: {decided.why}")


# ------------------------------------------------------------------------------------------------
# Fixtures
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> Stack:
    """The deployed stack: its outputs and clients. Exits the run when no outputs can be read."""
    return _stack(request.config)


def _stack(config: pytest.Config) -> Stack:
    """The session's stack, read once (the ``stack`` fixture, and the choice of which probes may run)."""
    found = getattr(config, "_platform_stack", None)
    if found is None:
        found = config._platform_stack = _read_stack(config)  # type: ignore[attr-defined]
    return found


def _read_stack(config: pytest.Config) -> Stack:
    outputs_path, stack_name = config.getoption("--outputs"), config.getoption("--stack")
    if outputs_path:
        loader = lambda: read_outputs_file(Path(outputs_path))  # noqa: E731
    elif stack_name:
        loader = lambda: read_stack_outputs(stack_name)  # noqa: E731
    else:
        pytest.exit("lakehouse_platform/probes needs --stack <name> or --outputs <file> (see lakehouse_platform/probes/README.md)", 4)
    try:
        outputs = loader()
    except OutputsError as exc:
        pytest.exit(f"cannot read the stack outputs: {exc}", 4)
    missing = [key for key in REQUIRED_OUTPUTS if not outputs.get(key)]
    if missing:
        where = f"stack {stack_name}" if stack_name else outputs_path
        pytest.exit(f"the outputs of {where} lack {', '.join(missing)} (has: {', '.join(sorted(outputs)) or 'nothing'}); "
                    "is the stack deployed (make up / pulumi up)?", 4)
    run_id = time.strftime("%m%d%H%M%S") + uuid.uuid4().hex[:4]
    return Stack(outputs=outputs, name=stack_name, run_id=run_id, loader=loader)


@pytest.fixture(scope="session")
def created_tables(stack: Stack, request: pytest.FixtureRequest):
    """Tables this run creates, purged at the end unless --keep-tables (namespaces dropped too)."""
    tables: list[str] = []
    yield tables
    if request.config.getoption("--keep-tables") or not tables:
        return
    try:
        catalog = stack.catalog()
    except Exception:  # noqa: BLE001 - the catalog may be what failed
        return
    import tenacity

    retry = tenacity.Retrying(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_fixed(1), reraise=True)
    namespaces = set()
    locations = []
    for ident in tables:
        namespaces.add(ident.rsplit(".", 1)[0])
        try:
            locations.append(catalog.load_table(ident).location())
        except Exception:  # noqa: BLE001 - a table the run lost already (the recovery drill's)
            pass
        try:
            retry(catalog.purge_table, ident)
        except Exception:  # noqa: BLE001 - e.g. the catalog the probes found broken; leave it for a later run
            try:
                catalog.drop_table(ident)
            except Exception:  # noqa: BLE001
                pass
    for namespace in namespaces:
        try:
            catalog.drop_namespace(namespace)
        except Exception:  # noqa: BLE001
            pass
    # A purge deletes what the table's snapshots reference; the files of commits that never landed (a retried
    # 409's data, manifests and metadata.json) stay. Left on storage, a later rebuild from storage (the recovery
    # drill, on a stack probed before) registers the table again, unreadable: every object under it goes too.
    from lakehouse_platform.probes.support.fixture import delete_prefix, table_prefix

    for location in locations:
        if (found := table_prefix(location)) is not None:
            delete_prefix(stack, *found)


@pytest.fixture
def figure(request: pytest.FixtureRequest):
    """``figure("9 files, 50,002 rows")``: the probe's headline number for the summary and JUnit XML."""

    def record(text: str) -> None:
        request.node.user_properties = [p for p in request.node.user_properties if p[0] != "figure"]
        request.node.user_properties.append(("figure", text))
        request.config._platform_results.figures[request.node.nodeid] = text  # type: ignore[attr-defined]

    return record


@pytest.fixture
def say(request: pytest.FixtureRequest):
    """``say("== spark wrote ...")``: a line shown live on the terminal (also kept in the JUnit output)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    first = [True]

    def write(line: str) -> None:
        print(line)  # captured: lands in the JUnit XML's system-out
        if reporter is None or capman is None or request.config.getoption("capture") == "no":
            return
        with capman.global_and_fixture_disabled():
            if first[0]:
                reporter.write_line("")
                first[0] = False
            reporter.write_line(line)

    return write


@pytest.fixture(scope="session", autouse=True)
def _stop_spark_at_end():
    yield
    from lakehouse_platform.probes.support import engines

    engines.stop_spark()
