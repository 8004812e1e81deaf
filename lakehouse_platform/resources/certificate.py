"""``SelfSignedCertificate``: a TLS key and certificate the platform issues for one of its servers (governance).

Trino's password authentication works only over HTTPS (over plain HTTP it either refuses passwords or,
with ``allow-insecure-over-http``, lets anyone name any user: fails open), so the platform issues the
server a certificate of its own. A dynamic resource rather than a file made at start-up: the key is
made once, on ``create``, kept in the state as a Pulumi secret, and reaches every target the same
way a secret does (native files, a container upload, a Secrets Manager value); the certificate is a
plain stack output clients verify against.

Lifecycle: ``create`` issues an RSA-2048 key and a self-signed certificate (SHA-256, the given DNS
names and IP addresses as subject alternative names, valid ``days``); identical inputs give no diff,
so a second ``pulumi up`` changes nothing; a change of hosts or validity, or a certificate within
``RENEW_BEFORE_DAYS`` of its expiry, is a replacement (a new key and certificate, the server restarts
with them); ``delete`` forgets them (nothing outside the state holds them).

Like every provider of the project, it is serialized by reference to its class (``lakehouse_platform.providers``).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.providers import PlainBlob, code_changed

RENEW_BEFORE_DAYS = 30
INPUT_KEYS = ("common_name", "hosts", "days")
SECRET_OUTPUTS = ["key_pem", "pem"]
#: What ``issue`` makes: kept as they are by an update.
ISSUED = ("cert_pem", "key_pem", "pem", "not_after", "fingerprint")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def issue(common_name: str, hosts: Sequence[str], days: int, now: dt.datetime | None = None) -> dict[str, Any]:
    """A new key and self-signed certificate: ``cert_pem``, ``key_pem``, ``pem`` (key then certificate),
    ``not_after`` (ISO 8601 UTC) and ``fingerprint`` (sha256 of the certificate, hex)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = now or dt.datetime.now(dt.UTC)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "lakehouse platform")])
    sans = [x509.IPAddress(ipaddress.ip_address(h)) if _is_ip(h) else x509.DNSName(h) for h in hosts]
    public = key.public_key()
    not_after = now + dt.timedelta(days=days)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        # Its own trust anchor: clients put this certificate in their CA file.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                     content_commitment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return {
        "cert_pem": cert_pem,
        "key_pem": key_pem,
        "pem": key_pem + cert_pem,
        "not_after": not_after.isoformat(timespec="seconds"),
        "fingerprint": certificate.fingerprint(hashes.SHA256()).hex(),
    }


def _inputs(props: Mapping[str, Any]) -> dict[str, Any]:
    hosts = [str(h) for h in props.get("hosts") or []]
    days = props.get("days")
    return {"common_name": str(props.get("common_name", "")), "hosts": hosts,
            "days": int(days) if isinstance(days, (int, float)) else days}


def problems(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the inputs as ``(property, reason)``."""
    inputs = _inputs(props)
    found = []
    if not inputs["common_name"]:
        found.append(("common_name", "a certificate needs a common name"))
    if not inputs["hosts"]:
        found.append(("hosts", "a certificate needs at least one DNS name or IP address"))
    if not isinstance(inputs["days"], int) or not 1 <= inputs["days"] <= 3650:
        found.append(("days", f"{inputs['days']!r} is not a validity in days between 1 and 3650"))
    return found


def expiring(props: Mapping[str, Any], now: dt.datetime | None = None) -> bool:
    """True when the recorded certificate expires within ``RENEW_BEFORE_DAYS`` (or records no expiry)."""
    recorded = props.get("not_after")
    if not recorded:
        return True
    now = now or dt.datetime.now(dt.UTC)
    return dt.datetime.fromisoformat(str(recorded)) - now < dt.timedelta(days=RENEW_BEFORE_DAYS)


class CertificateProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Issues, keeps and renews one self-signed certificate (contract: module docstring)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        return pulumi.dynamic.CheckResult(news, [pulumi.dynamic.CheckFailure(k, why) for k, why in problems(news)])

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        inputs = _inputs(props)
        issued = issue(inputs["common_name"], inputs["hosts"], inputs["days"])
        return pulumi.dynamic.CreateResult(issued["fingerprint"], {**props, **inputs, **issued})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old, new = _inputs(olds), _inputs(news)
        changed = [key for key in INPUT_KEYS if old[key] != new[key]]
        if not changed and expiring(olds):
            changed = ["days"]  # renew: a replacement issues a new key and certificate
        return pulumi.dynamic.DiffResult(changes=bool(changed) or code_changed(olds, news), replaces=changed,
                                         stables=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        """Only new provider code reaches here (any input change replaces): the key and certificate are kept."""
        return pulumi.dynamic.UpdateResult({**olds, **news, **{k: olds[k] for k in ISSUED if k in olds}})

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing outside the state holds the key: forgetting it is all there is to do."""


class SelfSignedCertificate(pulumi.dynamic.Resource, module="governance", name="SelfSignedCertificate"):
    """A TLS key and certificate for one server (contract: module docstring)."""

    cert_pem: pulumi.Output[str]
    """The certificate (PEM): what clients verify the server against."""
    key_pem: pulumi.Output[str]
    """The private key (PKCS#8 PEM), a secret."""
    pem: pulumi.Output[str]
    """Key then certificate in one PEM (what Trino's ``http-server.https.keystore.path`` reads), a secret."""
    not_after: pulumi.Output[str]
    fingerprint: pulumi.Output[str]

    def __init__(self, name: str, *, common_name: pulumi.Input[str], hosts: pulumi.Input[Sequence[str]],
                 days: pulumi.Input[int], labels: Mapping[str, str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"common_name": common_name, "hosts": hosts, "days": days, "labels": dict(labels or {}),
                 "cert_pem": None, "key_pem": None, "pem": None, "not_after": None, "fingerprint": None}
        merged = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS))
        super().__init__(CertificateProvider(), name, props, merged)
