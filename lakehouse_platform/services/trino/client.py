"""A Trino client of a deployed stack, from its outputs: what the smoke check, the probes and the CLI connect with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakehouse_platform.services.profiles import certificate_file, host_profiles, identity_of, profile
from lakehouse_platform.services.trino.config import PROFILE


def connection(outputs: Mapping[str, Any], identity: str | None = None, catalog: str | None = None,
               user: str | None = None, password: str | None = None, request_timeout: float = 120) -> Any:
    """A Trino DB-API connection over HTTPS as ``identity`` (its user and password), verified against the
    platform's certificate; ``user``/``password`` override the identity's (to prove refusals)."""
    import requests
    import trino

    who = identity_of(outputs, identity)
    filled = profile(outputs, PROFILE, who)
    session = requests.Session()
    # REQUESTS_CA_BUNDLE in the environment would override verify= (requests merges the environment last):
    # this session trusts exactly the platform's certificate.
    session.trust_env = False
    session.verify = certificate_file(outputs, filled["certificate"])
    user = user or filled["user"]
    auth = trino.auth.BasicAuthentication(user, filled["password"] if password is None else password)
    reachable = (filled.get("catalogs_by_identity") or {}).get(who) or filled.get("catalogs") or [None]
    return trino.dbapi.connect(host=filled["host"], port=int(filled["port"]), user=user, auth=auth,
                               http_scheme="https", http_session=session, catalog=catalog or reachable[0],
                               request_timeout=request_timeout)


def smoke(outputs: Mapping[str, Any]) -> list[tuple[str, str, bool, str]]:
    """Trino (HTTPS, password) lists the Iceberg catalogs its profile names; nothing where the stack runs no Trino."""
    if PROFILE not in host_profiles(outputs):
        return []
    check = "Trino (HTTPS, password) sees the Iceberg catalogs"
    try:
        cur = connection(outputs, request_timeout=30).cursor()
        cur.execute("SHOW CATALOGS")
        catalogs = sorted(r[0] for r in cur.fetchall())
        wanted = host_profiles(outputs)[PROFILE]["catalogs"]
        return [("compute", check, all(c in catalogs for c in wanted), f"catalogs: {catalogs}")]
    except Exception as exc:  # noqa: BLE001 - a smoke check reports, it does not raise
        return [("compute", check, False, str(exc))]
