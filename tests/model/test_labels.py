"""lakehouse_platform.labels: the label keys, the layers and the owner rule the program and the policy pack share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lakehouse_platform.control.isolated import FIXTURES
from lakehouse_platform.labels import LABEL_KEYS, LAYER_NAMES, Ownership, labels
from lakehouse_platform.layers.base import layer_labels
from lakehouse_platform.model import Layer
from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.resources import StackContext
from tests.support.stacks import spec_of

ROOT = Path(__file__).resolve().parents[2]
TABLE = Ownership(
    layer_owners={"catalog": "platform", "compute": "each engine's team", "governance": "security"},
    service_layers={"polaris": "catalog", "trino": "compute", "spark": "compute"},
    service_owners={"polaris": None, "trino": "analytics engineering", "spark": None},
)


def test_the_owner_is_the_layers_or_its_own_services():
    assert TABLE.owner("compute") == "each engine's team"
    assert TABLE.owner("compute", "trino") == "analytics engineering"  # a service of that layer, with its own team
    assert TABLE.owner("compute", "spark") == "each engine's team"  # a service of that layer, without one
    assert TABLE.owner("catalog", "polaris") == "platform"
    # governance's resources made for a catalog are governance's, whatever the catalog's owner
    assert TABLE.owner("governance", "polaris") == "security"
    assert TABLE.owner("governance", "trino") == "security"
    assert TABLE.owner("governance", "no-such-service") == "security"
    assert TABLE.owner("nowhere") is None and TABLE.owner(None, "trino") is None
    assert TABLE.whose("compute", "trino") == "service trino"
    assert TABLE.whose("governance", "polaris") == "layer governance"


def test_labels_carry_the_four_keys():
    assert labels("lakehouse", "governance", "security", "polaris") == {
        "lakehouse.platform": "lakehouse", "lakehouse.layer": "governance", "lakehouse.owner": "security",
        "lakehouse.service": "polaris"}
    assert set(labels("lakehouse", "storage", "platform")) == set(LABEL_KEYS) - {"lakehouse.service"}


def test_the_program_and_the_pack_apply_the_same_rule():
    spec = spec_of("cloud")
    context = StackContext.from_dict(pack_config.context_for_stack("cloud", FIXTURES))
    assert tuple(layer.value for layer in Layer) == LAYER_NAMES
    for layer in Layer:
        for service in [None, *spec.services]:
            written = layer_labels(spec, layer, service)["lakehouse.owner"]
            assert written == context.owner_of(layer.value, service), (layer, service)
    assert layer_labels(spec, Layer.GOVERNANCE, "polaris")["lakehouse.owner"] == "security, executed by platform"
    assert layer_labels(spec, Layer.CATALOG, "polaris")["lakehouse.owner"] == "platform"


def test_the_module_imports_neither_pulumi_nor_pydantic():
    code = "import sys, lakehouse_platform.labels; print(sorted(m for m in ('pulumi', 'pydantic') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
