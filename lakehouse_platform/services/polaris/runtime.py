"""Polaris's catalog job: the warehouse catalog and one principal per identity, converged over the management API.

    python -m lakehouse_platform.services.polaris.runtime --config /etc/lakehouse/polaris-access.json

The only process of the platform that acts as Polaris's root (its client id and secret from
``POLARIS_ROOT_CLIENT_ID`` / ``POLARIS_ROOT_SECRET``). With root's token it makes, each run, what the config
declares (``config.access_config``, the principals of ``principals``):

1. the warehouse catalog (201; 409: it exists);
2. the namespaces that namespace-level grants name (Iceberg REST, 200; 409: it exists);
3. per identity: the principal (created with the property ``managed-by``), its credentials reset to the stack's
   client id and secret (``POST /principals/{name}/reset``: root only, on by default in 1.7.0,
   ENABLE_CREDENTIAL_RESET), its principal role and catalog role, both assigned, and the catalog role's grants
   made exactly the declared ones (missing ones added, others revoked);
4. principals this job made earlier that the stack no longer declares are deleted with their roles.

Every step is idempotent: a second run finds everything done. Polaris not answering yet (no connection, 5xx)
is waited for up to ``wait_s``; any other refusal fails the job with the step, the status and Polaris's answer.
Secrets are read from the environment and never printed. Strings ``${ENV:NAME}`` in the catalog request are
that variable's value (on aws: the vending role's and the key's ARNs).

Runtime code, standing alone (stdlib and requests): it runs in the operations image on docker and aws.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests

#: The property every principal this job makes carries: what step 4 may delete.
MANAGED_BY = ("managed-by", "lakehouse-platform")
ENV_ROOT_CLIENT_ID = "POLARIS_ROOT_CLIENT_ID"
ENV_ROOT_SECRET = "POLARIS_ROOT_SECRET"  # noqa: S105 - the variable's name
_ENV_REFERENCE = re.compile(r"\$\{ENV:([A-Za-z_][A-Za-z0-9_]*)\}")


class JobError(Exception):
    """A step Polaris refused: what the job prints before it exits 1."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any


def _quote(name: str) -> str:
    return quote(name, safe="")


def expand(value: Any, env: dict[str, str]) -> Any:
    """``value`` with every ``${ENV:NAME}`` string replaced by that variable (missing: an error naming it)."""
    if isinstance(value, dict):
        return {k: expand(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, env) for v in value]
    if isinstance(value, str):
        def one(match: re.Match[str]) -> str:
            if match.group(1) not in env:
                raise JobError(f"the catalog request names ${{ENV:{match.group(1)}}}, which is not set")
            return env[match.group(1)]
        return _ENV_REFERENCE.sub(one, value)
    return value


class Polaris:
    """Polaris's REST APIs as root, with the realm header on every call."""

    def __init__(self, url: str, realm: str, wait_s: float, log: Callable[[str], None],
                 session: requests.Session | None = None, retry_s: float = 2) -> None:
        self.url = url.rstrip("/")
        self.realm = realm
        self.wait_s = wait_s
        self.retry_s = retry_s
        self.log = log
        self.http = session or requests.Session()
        self.token: str | None = None

    def _send(self, method: str, path: str, body: Any = None, form: dict[str, str] | None = None) -> Answer:
        headers = {"Polaris-Realm": self.realm}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        response = self.http.request(method, self.url + path, json=body, data=form, headers=headers, timeout=30)
        try:
            parsed = response.json() if response.content else None
        except ValueError:
            parsed = response.text
        return Answer(response.status_code, parsed)

    def login(self, client_id: str, secret: str) -> None:
        """Root's token (client credentials), waiting while Polaris does not answer or answers 5xx."""
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret,
                "scope": "PRINCIPAL_ROLE:ALL"}
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                answer = self._send("POST", "/api/catalog/v1/oauth/tokens", form=form)
            except requests.ConnectionError as exc:
                why = f"no connection ({type(exc).__name__})"
            else:
                if answer.status < 500:
                    break
                why = f"HTTP {answer.status}"
            if time.monotonic() > deadline:
                raise JobError(f"Polaris token endpoint: {why} for {self.wait_s:.0f} s")
            self.log(f"waiting for Polaris's token endpoint: {why}")
            time.sleep(self.retry_s)
        if answer.status != 200 or not isinstance(answer.body, dict) or not answer.body.get("access_token"):
            raise JobError(f"Polaris token endpoint: HTTP {answer.status}: {answer.body}")
        self.token = str(answer.body["access_token"])

    def step(self, what: str, method: str, path: str, body: Any = None, done: Iterable[int] = (200, 201, 204),
             already: Iterable[int] = ()) -> Answer:
        """One call: ``done`` statuses print done, ``already`` ones already done; anything else fails the job."""
        answer = self._send(method, path, body)
        if answer.status in done:
            self.log(f"{what}: done (HTTP {answer.status})")
        elif answer.status in already:
            self.log(f"{what}: already done (HTTP {answer.status})")
        else:
            raise JobError(f"{what}: HTTP {answer.status}: {answer.body}")
        return answer

    def read(self, what: str, path: str) -> Any:
        answer = self._send("GET", path)
        if answer.status != 200:
            raise JobError(f"{what}: HTTP {answer.status}: {answer.body}")
        return answer.body


MANAGEMENT = "/api/management/v1"


def _grant_key(grant: dict[str, Any]) -> tuple[Any, ...]:
    """A grant compared as Polaris lists it (namespace as a list; fields other than these ignored)."""
    return (grant.get("type"), tuple(grant.get("namespace") or ()), grant.get("tableName"), grant.get("viewName"),
            grant.get("privilege"))


def converge_principal(polaris: Polaris, catalog: str, entry: dict[str, Any], secret: str) -> None:
    """One identity: principal, credentials, principal role, catalog role, assignments, exactly its grants."""
    name, role, catalog_role = entry["name"], entry["principal_role"], entry["catalog_role"]
    pname, rname, crname, cname = _quote(name), _quote(role), _quote(catalog_role), _quote(catalog)
    polaris.step(f"create principal {name}", "POST", f"{MANAGEMENT}/principals",
                 {"principal": {"name": name, "properties": dict([MANAGED_BY])}, "credentialRotationRequired": False},
                 done=(201,), already=(409,))
    polaris.step(f"set the credentials of principal {name}", "POST", f"{MANAGEMENT}/principals/{pname}/reset",
                 {"clientId": entry["client_id"], "clientSecret": secret}, done=(200,))
    polaris.step(f"create principal role {role}", "POST", f"{MANAGEMENT}/principal-roles",
                 {"principalRole": {"name": role}}, done=(201,), already=(409,))
    polaris.step(f"assign principal role {role} to {name}", "PUT", f"{MANAGEMENT}/principals/{pname}/principal-roles",
                 {"principalRole": {"name": role}}, done=(200, 201))
    polaris.step(f"create catalog role {catalog_role} in {catalog}", "POST",
                 f"{MANAGEMENT}/catalogs/{cname}/catalog-roles", {"catalogRole": {"name": catalog_role}},
                 done=(201,), already=(409,))
    polaris.step(f"assign catalog role {catalog_role} to principal role {role}", "PUT",
                 f"{MANAGEMENT}/principal-roles/{rname}/catalog-roles/{cname}", {"catalogRole": {"name": catalog_role}},
                 done=(200, 201))
    grants_path = f"{MANAGEMENT}/catalogs/{cname}/catalog-roles/{crname}/grants"
    held = polaris.read(f"list the grants of catalog role {catalog_role}", grants_path).get("grants") or []
    wanted = {_grant_key(g): g for g in entry["grants"]}
    present = {_grant_key(g): g for g in held}
    for key, grant in present.items():
        if key not in wanted:
            polaris.step(f"revoke {_describe(grant)} from catalog role {catalog_role}", "POST",
                         f"{grants_path}?cascade=false", {"grant": grant}, done=(200, 201, 204))
    for key, grant in wanted.items():
        if key not in present:
            polaris.step(f"grant {_describe(grant)} to catalog role {catalog_role}", "PUT", grants_path,
                         {"grant": grant}, done=(200, 201))


def _describe(grant: dict[str, Any]) -> str:
    where = grant.get("type", "?")
    if grant.get("namespace"):
        where += " " + ".".join(grant["namespace"])
    return f"{grant.get('privilege')} on {where}"


def remove_undeclared(polaris: Polaris, catalog: str, declared: list[dict[str, Any]]) -> None:
    """Delete the principals this job made that the stack no longer declares, with their roles."""
    names = {e["name"] for e in declared}
    listed = polaris.read("list principals", f"{MANAGEMENT}/principals").get("principals") or []
    key, value = MANAGED_BY
    for found in listed:
        name = found.get("name")
        if name in names or (found.get("properties") or {}).get(key) != value:
            continue
        polaris.step(f"delete principal {name} (no longer an identity of the stack)", "DELETE",
                     f"{MANAGEMENT}/principals/{_quote(name)}", done=(204,), already=(404,))
        polaris.step(f"delete principal role {name}", "DELETE", f"{MANAGEMENT}/principal-roles/{_quote(name)}",
                     done=(204,), already=(404,))
        polaris.step(f"delete catalog role {name}", "DELETE",
                     f"{MANAGEMENT}/catalogs/{_quote(catalog)}/catalog-roles/{_quote(name)}", done=(204,),
                     already=(404,))


def run(config: dict[str, Any], env: dict[str, str], log: Callable[[str], None] = print,
        session: requests.Session | None = None) -> None:
    """Every step of the job (``JobError`` on the first refusal)."""
    missing = [n for n in (ENV_ROOT_CLIENT_ID, ENV_ROOT_SECRET, *(e["secret_env"] for e in config["principals"]))
               if not env.get(n)]
    if missing:
        raise JobError(f"not set in the job's environment: {', '.join(missing)}")
    polaris = Polaris(config["url"], config["realm"], float(config.get("wait_s", 300)), log, session,
                      retry_s=float(config.get("retry_s", 2)))
    polaris.login(env[ENV_ROOT_CLIENT_ID], env[ENV_ROOT_SECRET])
    request = expand(config["catalog"], env)
    catalog = request["catalog"]["name"]
    polaris.step(f"create catalog {catalog}", "POST", f"{MANAGEMENT}/catalogs", request, done=(200, 201),
                 already=(409,))
    for namespace in config.get("namespaces") or []:
        polaris.step(f"create namespace {'.'.join(namespace)}", "POST",
                     f"/api/catalog/v1/{_quote(catalog)}/namespaces", {"namespace": namespace}, done=(200,),
                     already=(409,))
    for entry in config["principals"]:
        converge_principal(polaris, catalog, entry, env[entry["secret_env"]])
    remove_undeclared(polaris, catalog, config["principals"])
    log("all steps done")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakehouse_platform.services.polaris.runtime",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--config", required=True, help="the job's JSON config (no secret in it)")
    args = parser.parse_args(argv)
    with open(args.config, encoding="utf-8") as handle:
        config = json.load(handle)
    try:
        run(config, dict(os.environ), log=lambda line: print(line, flush=True))
    except JobError as exc:
        print(f"polaris access: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
