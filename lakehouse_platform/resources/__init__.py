"""Deployment steps that are not processes, as typed Pulumi dynamic resources (target-independent).

``certificate.SelfSignedCertificate``: the TLS certificates the platform issues for its servers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi

from lakehouse_platform.layers.base import layer_labels
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.registry import registry


@dataclass
class Issued:
    """What the certificates of a stack give the rest of the program."""

    secrets: dict[str, pulumi.Output[str]] = field(default_factory=dict)  # <name>-pem, <name>-cert
    certificates: dict[str, pulumi.Output[str]] = field(default_factory=dict)  # name -> certificate PEM (public)


def issue_certificates(spec: PlatformSpec, governance: pulumi.Resource) -> Issued:
    """One ``SelfSignedCertificate`` per certificate an enabled service declares, under the governance layer.

    Their PEMs join the stack's secrets (``${secret:<name>-pem>}`` in a plan), so every target hands
    them to its service the way it hands any secret; the certificates alone are a plain output.
    """
    from lakehouse_platform.resources.certificate import SelfSignedCertificate

    issued = Issued()
    for definition in registry():
        if definition.name not in spec.enabled_services():
            continue
        for cert in definition.governance.certificates:
            hosts = cert.hosts(ServiceContext(spec, definition.name))
            resource = SelfSignedCertificate(
                f"{spec.name}-{cert.name}", common_name=hosts[0], hosts=hosts, days=spec.governance.tls_days,
                labels=layer_labels(spec, Layer.GOVERNANCE, definition.name),
                opts=pulumi.ResourceOptions(parent=governance),
            )
            issued.secrets[f"{cert.name}-pem"] = pulumi.Output.secret(resource.pem)
            issued.secrets[f"{cert.name}-cert"] = resource.cert_pem
            issued.certificates[cert.name] = pulumi.Output.unsecret(resource.cert_pem)
    return issued
