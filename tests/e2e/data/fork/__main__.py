"""This repository's program at 0.4.0 (``lakehouse_platform/program.py``'s ``main`` then), made of the package's own
parts: what a fork of the repository deployed. The seven layer components at the stack's root, every child named
by its service, no platform component, the same outputs. tests/component/test_urns.py holds it to 0.4.0's URNs;
tests/e2e/test_team_project.py deploys it, then moves the stack to a team's project."""

import pulumi

from lakehouse_platform import outputs
from lakehouse_platform.component import evaluation, platform_config
from lakehouse_platform.config import NAMESPACE
from lakehouse_platform.layers import create_layers
from lakehouse_platform.model import Layer
from lakehouse_platform.resources import issue_certificates
from lakehouse_platform.services.resolver import CacheResolver
from lakehouse_platform.services.secrets import resolve_secrets
from lakehouse_platform.targets import prepare
from lakehouse_platform.version import PLATFORM_VERSION

spec = platform_config()
secrets = resolve_secrets(pulumi.Config(NAMESPACE), spec)
host = evaluation()  # the artifact cache and this host's ports (under the unit tier's mocks: its fake resolver)
target = prepare(spec, secrets, host.resolver or CacheResolver(), check_ports=host.check_ports)
layers = create_layers(spec, bare=True)
issued = issue_certificates(spec, layers[Layer.GOVERNANCE])
secrets.update(issued.secrets)
built = target.build(layers)
for layer, component in layers.items():
    component.complete(built.layers.get(layer, {}))
exported = {
    "platform_version": PLATFORM_VERSION, "target": spec.target.value, "platform": spec.name,
    "stack": pulumi.get_stack(), "disposable": spec.disposable, "endpoints": outputs.endpoints(spec),
    "version_manifest": spec.version_manifest(), "ownership": outputs.ownership(spec), "tables": outputs.tables(spec),
    "grants": outputs.grants(spec), "recovery": outputs.recovery(spec), "observability": outputs.observability(spec),
    "profiles": outputs.profiles(spec), "credentials": outputs.credentials(secrets, spec),
    "certificates": pulumi.Output.from_input(issued.certificates), **outputs.contributed(spec),
    "layers": {layer.value: component.outputs for layer, component in layers.items()}, **built.outputs,
}
for key, value in exported.items():
    pulumi.export(key, value)
