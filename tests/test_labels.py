"""infra.labels: the label keys, the layers and the owner rule the program and the policy pack share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from infra.labels import LABEL_KEYS, LAYER_NAMES, labels
from infra.layers.base import layer_labels
from infra.spec import Layer, load_stack
from policies import config as pack_config
from policies.resources import StackContext

ROOT = Path(__file__).resolve().parents[1]


def test_labels_carry_the_four_keys():
    assert labels("lakehouse", "governance", "security", "polaris") == {
        "lakehouse.platform": "lakehouse", "lakehouse.layer": "governance", "lakehouse.owner": "security",
        "lakehouse.service": "polaris"}
    assert set(labels("lakehouse", "storage", "platform")) == set(LABEL_KEYS) - {"lakehouse.service"}


def test_the_program_and_the_pack_apply_the_same_rule():
    spec = load_stack("cloud")
    context = StackContext.from_dict(pack_config.context_for_stack("cloud"))
    assert tuple(layer.value for layer in Layer) == LAYER_NAMES
    for layer in Layer:
        for service in [None, *spec.services]:
            written = layer_labels(spec, layer, service)["lakehouse.owner"]
            assert written == context.owner_of(layer.value, service), (layer, service)


def test_the_module_imports_neither_pulumi_nor_pydantic():
    code = "import sys, infra.labels; print(sorted(m for m in ('pulumi', 'pydantic') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
