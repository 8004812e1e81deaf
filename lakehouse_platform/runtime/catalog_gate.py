"""The catalog gate: bearer tokens in front of a REST catalog that has no authentication of its own (governance).

The Iceberg REST fixture answers anyone, and it writes every metadata file with its own store keys: a
client holding only read-only store keys can still evolve a schema, create or drop a table, or expire
every snapshot through it. The gate is the only address clients get for that catalog (the profiles and
Trino's catalog files point at it); it checks every request before the catalog sees it:

- no ``Authorization: Bearer <token>`` (the scheme in any case, RFC 7235), or a token no identity holds:
  **401** (never served, not even ``/v1/config``);
- an identity whose grants do not allow what the request needs (read, write or manage on each namespace it
  touches: ``lakehouse_platform/runtime/catalog_requests.py`` says what each REST request needs) is **403**, before
  the catalog sees the request; a request the gate does not know is **403** too (it cannot check it);
- ``GET /v1/namespaces`` answers only the namespaces the identity may read.

The grants are the identity's access table, rendered from the stack's grants by the one decision
(``PlatformSpec.access_of``): each known namespace with its actions, and ``*`` for any other.

**Tokens.** An identity's catalog token (the platform secret ``catalog-token-<identity>``) is never
stored: the config holds its sha256. A client presents either that token itself (matched by its hash),
or an access token the gate issued. The gate is its catalog's OAuth2 token endpoint
(``POST /v1/oauth/tokens``, never forwarded, no bearer needed), so every client's default credential
flow works through it:

- ``grant_type=client_credentials``: the identity's name as ``client_id`` and its catalog token as
  ``client_secret`` (form fields, the secret alone, or HTTP Basic ``name:token``: PyIceberg's
  ``credential``, its ``oauth2`` auth manager, Iceberg Java's ``credential``) give a short-lived access
  token for that identity;
- ``grant_type=urn:ietf:params:oauth:grant-type:token-exchange`` with a current token (the catalog
  token or an issued one) as ``subject_token``, or with the client's credential as HTTP Basic (Iceberg
  Java's refresh, before and after expiry) gives a fresh one for the same identity.

An issued token is a JWT (HS256) naming the identity (``sub``) with its expiry (``exp``, which Iceberg
Java reads to schedule its refresh), signed with the secret ``catalog-gate-signing-key``. The key
reaches the gate in its environment (``CATALOG_GATE_SIGNING_KEY``), never in its config file. A wrong
credential is **401** ``{"error": "invalid_client", ...}`` (RFC 6749's form); an expired or forged
access token is a 401 like a missing one. Two identities whose tokens hash alike could not be told
apart: the gate refuses to start on such a config.

A client that sends ``Expect: 100-continue`` gets ``HTTP/1.1 100 Continue`` once the gate has authenticated
it and is about to read its body (RFC 9110 section 10.1.1); a request refused before its body is read is
answered at once, and the connection closed (the body it would still send is not read).

The gate forwards the request without the ``Authorization`` header (the catalog does not need it) and
relays the answer. When the catalog does not answer, the gate says **502** in the Iceberg error form
(clients treat it as retryable, and the exporter reports the catalog down). ``GET /healthz`` (the gate
itself) and ``GET /metrics`` (Prometheus' text format) need no token and never reach the catalog; nor
does ``OPTIONS`` (the gate answers a CORS preflight itself: tokens are bearer tokens, never cookies, so
any origin may ask, and still needs a token). ``TRACE`` and ``CONNECT`` are 405.

**The server: aiohttp**, one well-kept library for both sides of the proxy on one event loop: its
server parses with llhttp (C), sets ``TCP_NODELAY`` on every connection (a response never waits for the
client's delayed ACK) and listens with a real backlog (``listen_backlog``); its client keeps a pool of
connections to the catalog (``upstream_connections``). No ASGI layer sits between the two (uvicorn with
httpx would add one, and a second HTTP stack). The loop is uvloop's (libuv): 15-20% less CPU per forwarded
request than asyncio's own loop in an A/B run of the same gate on this project's host. Reads reuse
pooled connections (aiohttp resends an idempotent request once if the catalog had closed the pooled
connection); anything else (a commit above all) goes on a connection of its own, so a commit is never
sent on a connection the catalog may have just closed, and never resent. A request-target with raw
non-ASCII bytes is not HTTP (RFC 9112, RFC 3986: clients percent-encode them, and the gate forwards
the percent-encoded form as it is): the parser answers it 400 and the gate keeps serving.

**Metrics** (prometheus-client): decisions by identity (``lakehouse_catalog_gate_requests_total``),
the catalog's answer time by request kind as the gate measures it (``lakehouse_catalog_request_
duration_seconds``; ``kind="commit"`` is the atomic swap) with its answers by status class
(``lakehouse_catalog_responses_total``), the catalog not answering
(``lakehouse_catalog_gate_upstream_errors_total``), the whole request as the gate serves it, from its
first byte read to its last byte written (``lakehouse_catalog_gate_request_duration_seconds``), and
which kind of token each authenticated request carried (``lakehouse_catalog_gate_authenticated_total``).

``python -m lakehouse_platform.runtime.catalog_gate --config gate.json``; config::

    {"listen_host": "127.0.0.1", "listen_port": 8182, "upstream": "http://127.0.0.1:8181",
     "identities": [{"name": "reader", "grants": {"shop": ["read"], "*": ["read"]}, "token_sha256": "<hex>"},
                    ...]}
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
import jwt
import uvloop
from aiohttp import web
from multidict import CIMultiDict
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from yarl import URL

from lakehouse_platform.runtime import catalog_requests
from lakehouse_platform.runtime.catalog_requests import BadBody, Need, allowed
from lakehouse_platform.runtime.config import ENV_GATE_SIGNING_KEY, TOKEN_PATH
from lakehouse_platform.runtime.grants import EVERY_NAMESPACE, held

READ_METHODS = frozenset({"GET", "HEAD"})
#: Methods the gate forwards (after its checks); it answers OPTIONS itself and refuses anything else.
FORWARDED_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH")
ALLOW = ", ".join((*FORWARDED_METHODS, "OPTIONS"))
#: What a forwarded request is, for its latency: a commit (the catalog's atomic swap) above all.
KINDS = (
    ("commit", "POST", re.compile(r"^/v1/(?:[^/]+/)?(?:namespaces/[^/]+/tables/[^/]+|transactions/commit)$")),
    ("create_table", "POST", re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables$")),
    ("load_table", "GET", re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+$")),
    ("config", "GET", re.compile(r"^/v1/config$")),
)
#: The catalog's answer time (commits take tens of milliseconds to seconds).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: The whole request as the gate serves it: finer at the low end, where the gate's own cost shows.
REQUEST_BUCKETS = (0.0005, 0.001, 0.0025, *BUCKETS)
#: Headers that describe one connection, not the message, or that the gate sets itself: never forwarded.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "trailers", "transfer-encoding", "upgrade", "authorization", "host", "content-length",
                        "expect"})  # the gate answers a 100-continue expectation itself; the body goes whole
# The OAuth2 names of the Iceberg REST spec (RFC 6749, RFC 8693): names, not secrets.
CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"  # noqa: S105
#: Subject token types the gate exchanges: its tokens are access tokens, and JWTs.
SUBJECT_TOKEN_TYPES = frozenset({ACCESS_TOKEN_TYPE, "urn:ietf:params:oauth:token-type:jwt"})
ISSUER = "lakehouse-catalog-gate"
#: HS256 wants a key at least as long as its hash (RFC 7518 section 3.2).
MIN_SIGNING_KEY_BYTES = 32
#: The largest form the token endpoint reads (a credential or a token is well under a kilobyte).
MAX_FORM_BYTES = 64 * 1024
SERVER = "lakehouse-catalog-gate"

log = logging.getLogger("catalog-gate")  # not the service: the gate process's logger


def kind_of(method: str, path: str) -> str:
    """The kind of a request, for its latency: ``commit``, ``create_table``, ``load_table``, ``config``, ``other``."""
    for kind, kind_method, pattern in KINDS:
        if method == kind_method and pattern.match(path):
            return kind
    return "other"


def has_dot_segment(path: str) -> bool:
    """Whether a path has a ``.`` or ``..`` segment (also percent-encoded, or with ``;parameters``).

    The policy reads the path as sent; a catalog that resolved dot segments would serve another one
    (``.../tables/t/plan/..`` is the table itself), so the gate refuses them (no client sends them).
    """
    if "." not in path and "%2" not in path.lower():
        return False  # the common case, without splitting
    return any(segment.split(";", 1)[0].lower().replace("%2e", ".") in (".", "..") for segment in path.split("/"))


# -- configuration -------------------------------------------------------------------------------------


class ConfigError(Exception):
    """The gate's config or environment is not usable: each line names the key and what is allowed."""

    def __init__(self, source: str, problems: list[str]):
        super().__init__("\n".join(f"{source}: {problem}" for problem in problems))
        self.problems = problems


class Identity(BaseModel):
    """One identity the gate knows: its name, its access table, and the sha256 of its catalog token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="the identity's name (its client_id at the token endpoint)")
    grants: dict[str, tuple[Literal["read", "write", "manage"], ...]] = Field(
        description="namespace (top level) -> what it may do there; '*' for every other namespace "
                    "(PlatformSpec.access_of)")
    token_sha256: str = Field(pattern=r"^[0-9a-fA-F]{64}$",
                              description="sha256 (hex) of the identity's catalog token; never the token")

    @field_validator("token_sha256")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @field_validator("grants")
    @classmethod
    def _every_namespace(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        if EVERY_NAMESPACE not in value:
            raise ValueError("needs a '*' entry: what the identity may do on a namespace without an entry of its own "
                             "(an empty list for nothing)")
        return value


class GateConfig(BaseModel):
    """The gate's config file (rendered by the ``catalog_gate`` service package): no secret in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    listen_host: str = Field("127.0.0.1", description="address to listen on (loopback natively)")
    listen_port: int = Field(ge=0, le=65535, description="port to listen on (0: any free port)")
    upstream: str = Field(description="the catalog behind the gate, http://host:port")
    identities: list[Identity] = Field(min_length=1, description="who may pass, each with its token's hash")
    timeout_s: float = Field(60.0, gt=0, description="how long the catalog may take to answer")
    listen_backlog: int = Field(2048, ge=16, description="connections the kernel queues before the gate accepts")
    upstream_connections: int = Field(256, ge=1, description="connections to the catalog at once (pooled)")
    token_lifetime_s: int = Field(3600, ge=1, description="how long an access token the gate issues is valid")

    @field_validator("upstream")
    @classmethod
    def _http_upstream(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"{value!r} must be http://host:port")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _distinct_identities(self) -> GateConfig:
        names: dict[str, int] = {}
        hashes: dict[str, int] = {}
        for index, identity in enumerate(self.identities):
            if identity.name in names:
                raise ValueError(f"identities[{index}].name: {identity.name!r} is listed twice "
                                 f"(identities[{names[identity.name]}])")
            names[identity.name] = index
            if identity.token_sha256 in hashes:
                first = self.identities[hashes[identity.token_sha256]].name
                raise ValueError(
                    f"identities[{index}].token_sha256: identities {first!r} and {identity.name!r} have the same "
                    f"catalog token (sha256 {identity.token_sha256[:12]}...); the gate could not tell them apart: "
                    "give each identity a token of its own")
            hashes[identity.token_sha256] = index
        return self


def _problems(error: ValidationError) -> list[str]:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)  # a model check names its own keys
    return lines


def load_config(data: Mapping[str, Any], source: str = "config") -> GateConfig:
    """The validated config, or a ``ConfigError`` naming every bad key."""
    try:
        return GateConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(source, _problems(error)) from None


def signing_key_from(env: Mapping[str, str]) -> bytes:
    """The key the gate signs its access tokens with (``CATALOG_GATE_SIGNING_KEY``)."""
    value = env.get(ENV_GATE_SIGNING_KEY, "")
    if len(value.encode()) < MIN_SIGNING_KEY_BYTES:
        state = "is not set" if not value else f"has {len(value.encode())} bytes"
        raise ConfigError("environment", [
            f"{ENV_GATE_SIGNING_KEY} {state}: the gate signs the access tokens it issues with it (platform secret "
            f"catalog-gate-signing-key, stack config lakehouse:catalogGateSigningKey); it needs at least "
            f"{MIN_SIGNING_KEY_BYTES} bytes, e.g. `openssl rand -hex 32`"])
    return value.encode()


# -- tokens ----------------------------------------------------------------------------------------------


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who a request comes from, what it may do, and which kind of token it carried (``static`` or ``issued``)."""

    identity: str
    grants: Mapping[str, tuple[str, ...]]
    credential: str


class Tokens:
    """The identities, their static tokens (by hash) and the access tokens the gate signs."""

    def __init__(self, identities: Iterable[Identity], key: bytes, lifetime_s: int):
        self.by_hash = {i.token_sha256: i for i in identities}
        self.by_name = {i.name: i for i in self.by_hash.values()}
        self.key = key
        self.lifetime_s = lifetime_s

    def issue(self, identity: str) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": identity, "iat": now, "exp": now + self.lifetime_s}
        return jwt.encode(claims, self.key, algorithm="HS256")

    def caller(self, token: str) -> Caller | None:
        """The identity a bearer token stands for: its catalog token (by hash), or a current issued token."""
        static = self.by_hash.get(sha256_hex(token))
        if static is not None:
            return Caller(static.name, static.grants, "static")
        if token.count(".") != 2:
            return None
        try:
            claims = jwt.decode(token, self.key, algorithms=["HS256"], issuer=ISSUER,
                                options={"require": ["exp", "sub", "iss"]})
        except jwt.InvalidTokenError:
            return None
        identity = self.by_name.get(str(claims["sub"]))  # an identity removed since is gone
        return Caller(identity.name, identity.grants, "issued") if identity else None

    def client(self, client_id: str | None, secret: str) -> Identity | None:
        """The identity whose catalog token is ``secret`` (and whose name is ``client_id``, when given)."""
        digest = sha256_hex(secret)
        if client_id is None:
            return self.by_hash.get(digest)
        identity = self.by_name.get(client_id)
        if identity is None or not hmac.compare_digest(identity.token_sha256, digest):
            return None
        return identity


#: Set on a request once the gate has answered its ``Expect: 100-continue`` (it then reads the body).
CONTINUED = "lakehouse.continued"


def expects_continue(request: web.BaseRequest) -> bool:
    """Whether an HTTP/1.1 client waits for ``100 Continue`` before it sends the body (RFC 9110 section 10.1.1)."""
    return request.version >= (1, 1) and request.headers.get("Expect", "").strip().lower() == "100-continue"


async def continue_if_expected(request: web.BaseRequest) -> None:
    """``HTTP/1.1 100 Continue`` once, before the gate reads a body its client holds back until it is asked."""
    if expects_continue(request) and not request.get(CONTINUED):
        request[CONTINUED] = True
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the interim answer is not part of the response's size


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; the scheme is case-insensitive (RFC 7235)."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def basic_credential(authorization: str | None) -> tuple[str, str] | None:
    """``(client_id, client_secret)`` of an ``Authorization: Basic`` header (RFC 7617), if it is one."""
    scheme, _, encoded = (authorization or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, colon, secret = decoded.partition(":")
    return (client_id, secret) if colon else None


# -- metrics ---------------------------------------------------------------------------------------------


class Metrics:
    """The gate's metrics, in a registry of its own (prometheus-client)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter("lakehouse_catalog_gate_requests", "Requests the catalog gate decided, by identity.",
                                 ["identity", "decision"], registry=self.registry)
        self.upstream_errors = Counter("lakehouse_catalog_gate_upstream_errors", "Requests the catalog did not answer.",
                                       registry=self.registry)
        self.catalog_seconds = Histogram(
            "lakehouse_catalog_request_duration_seconds",
            "The catalog's answer time, by request kind (commit: the atomic swap), as its gate measures it.",
            ["kind"], buckets=BUCKETS, registry=self.registry)
        self.responses = Counter("lakehouse_catalog_responses",
                                 "The catalog's answers through the gate, by kind and status class.",
                                 ["kind", "status"], registry=self.registry)
        self.request_seconds = Histogram(
            "lakehouse_catalog_gate_request_duration_seconds",
            "Each request as the gate serves it, from reading it to its answer written, by kind.",
            ["kind"], buckets=REQUEST_BUCKETS, registry=self.registry)
        self.authenticated = Counter(
            "lakehouse_catalog_gate_authenticated",
            "Authenticated requests by identity and token: its catalog token (static) or one the gate issued.",
            ["identity", "credential"], registry=self.registry)

    def text(self) -> bytes:
        return generate_latest(self.registry)


# -- the server ------------------------------------------------------------------------------------------


def iceberg_error(code: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    """An Iceberg REST ``ErrorResponse``."""
    body = json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()
    return web.Response(status=code, body=body, content_type="application/json", headers=headers)


def oauth_error(code: int, error: str, description: str) -> web.Response:
    """An OAuth2 error answer (RFC 6749 section 5.2)."""
    headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
    if code == 401:
        headers["WWW-Authenticate"] = 'Basic realm="catalog-gate"'  # not the service: the realm clients see
    body = json.dumps({"error": error, "error_description": description}).encode()
    return web.Response(status=code, body=body, content_type="application/json", headers=headers)


class Gate:
    """The gate: decides on each request, answers its own endpoints, forwards the rest to the catalog."""

    def __init__(self, config: GateConfig, signing_key: bytes):
        self.config = config
        self.upstream = config.upstream
        self.tokens = Tokens(config.identities, signing_key, config.token_lifetime_s)
        self.metrics = Metrics()
        self.reads: aiohttp.ClientSession | None = None
        self.writes: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """The client sessions to the catalog (in the running loop)."""
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        # The catalog sees what the client sent: no headers of aiohttp's own, no cookies kept across
        # clients, bodies relayed as they come (compressed or not).
        common: dict[str, Any] = {"timeout": timeout, "auto_decompress": False, "cookie_jar": aiohttp.DummyCookieJar(),
                                  "skip_auto_headers": ("Accept", "Accept-Encoding", "User-Agent")}
        pooled = aiohttp.TCPConnector(limit=self.config.upstream_connections, keepalive_timeout=10)
        single = aiohttp.TCPConnector(limit=self.config.upstream_connections, force_close=True)
        self.reads = aiohttp.ClientSession(connector=pooled, **common)
        self.writes = aiohttp.ClientSession(connector=single, **common)

    async def close(self) -> None:
        for session in (self.reads, self.writes):
            if session is not None:
                await session.close()

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """One request, answered and timed to its last byte written."""
        started = time.perf_counter()
        path = request.raw_path.split("?", 1)[0]
        kind = kind_of(request.method, path)
        response = await self.answer(request, path, kind)
        if request.headers.get("Origin"):
            response.headers.setdefault("Access-Control-Allow-Origin", "*")
        response.headers.setdefault("Server", SERVER)
        if expects_continue(request) and not request.get(CONTINUED) and request.body_exists:
            # Answered before the body was asked for: the client may never send it, so this connection
            # carries no other request (its unread body would be read as one).
            response.force_close()
        await response.prepare(request)
        await response.write_eof()
        self.metrics.request_seconds.labels(kind).observe(time.perf_counter() - started)
        return response

    async def answer(self, request: web.BaseRequest, path: str, kind: str) -> web.StreamResponse:
        method = request.method
        if method == "OPTIONS":
            return self.preflight(request)
        if method not in FORWARDED_METHODS:
            return iceberg_error(405, "MethodNotAllowedException", f"the catalog gate does not serve {method}",
                                 {"Allow": ALLOW})
        if path == "/healthz" and method in READ_METHODS:
            return web.Response(text="ok\n", content_type="text/plain")
        if path == "/metrics" and method == "GET":
            return web.Response(body=self.metrics.text(), headers={"Content-Type": CONTENT_TYPE_LATEST})
        if path == TOKEN_PATH:
            if method != "POST":
                return iceberg_error(405, "MethodNotAllowedException", f"{TOKEN_PATH} takes POST",
                                     {"Allow": "POST, OPTIONS"})
            return await self.token(request)
        if has_dot_segment(path):
            return iceberg_error(400, "BadRequestException", "a request path may not have . or .. segments")
        token = bearer_token(request.headers.get("Authorization"))
        caller = self.tokens.caller(token) if token else None
        if caller is None:
            self.metrics.decisions.labels("none", "unauthenticated").inc()
            self.refused(401, "-", method, path)
            reason = ("no or unknown credentials: send Authorization: Bearer <your identity's catalog token> "
                      "(stack output credentials.identities), or an access token from POST " + TOKEN_PATH)
            challenge = 'Bearer error="invalid_token"' if token else "Bearer"
            return iceberg_error(401, "NotAuthorizedException", reason, {"WWW-Authenticate": challenge})
        self.metrics.authenticated.labels(caller.identity, caller.credential).inc()
        found = catalog_requests.route(method, path, request.query)
        if found is None:
            return self.forbidden(caller, method, path, f"the gate does not know {method} {path}, and refuses what it "
                                                        "cannot check")
        if (refusal := self.refusal(caller, found.needs, method, path)) is not None:
            return refusal
        if found.body_needs is not None and not catalog_requests.holds_anywhere(caller.grants, found.body_needs):
            return self.forbidden(caller, method, path, f"identity {caller.identity} may not {found.body_needs} on "
                                                        f"any namespace ({method} {path})")
        body = None
        if found.from_body is not None or request.body_exists or method in ("POST", "PUT", "PATCH"):
            await continue_if_expected(request)
            body = await request.content.read()  # the whole body, however large (the catalog decides what it takes)
        if found.from_body is not None:
            try:
                needs = catalog_requests.needs_of_body(found, body or b"")
            except BadBody as exc:
                self.metrics.decisions.labels(caller.identity, "refused").inc()
                self.refused(400, caller.identity, method, path)
                return iceberg_error(400, "BadRequestException", f"the gate reads this request's body to decide, and "
                                                                 f"cannot: {exc}")
            if (refusal := self.refusal(caller, needs, method, path)) is not None:
                return refusal
        self.metrics.decisions.labels(caller.identity, "allowed").inc()
        return await self.forward(request, kind, body, caller if found.lists_namespaces else None)

    def refusal(self, caller: Caller, needs: tuple[Need, ...], method: str, path: str) -> web.Response | None:
        """403 for the first need the caller's grants do not allow, else None."""
        for need in needs:
            if not allowed(caller.grants, need):
                allowed_there = held(caller.grants, need.namespace)
                return self.forbidden(caller, method, path, f"identity {caller.identity} may not {need} ({method} "
                                                            f"{path}); its grants allow "
                                                            f"{', '.join(allowed_there) or 'nothing'} there")
        return None

    def forbidden(self, caller: Caller, method: str, path: str, message: str) -> web.Response:
        self.metrics.decisions.labels(caller.identity, "refused").inc()
        self.refused(403, caller.identity, method, path)
        return iceberg_error(403, "ForbiddenException", message)

    def preflight(self, request: web.BaseRequest) -> web.Response:
        """``OPTIONS``: what the gate serves, and a CORS preflight's answer (no token: browsers send none)."""
        headers = {"Allow": ALLOW, "Access-Control-Allow-Origin": "*", "Access-Control-Max-Age": "600",
                   "Access-Control-Allow-Methods": ", ".join(FORWARDED_METHODS)}
        if wanted := request.headers.get("Access-Control-Request-Headers"):
            headers["Access-Control-Allow-Headers"] = wanted
        return web.Response(status=204, headers=headers)

    def refused(self, code: int, identity: str, method: str, path: str) -> None:
        log.info("%s %s %s %s", code, identity, method, path)

    async def forward(self, request: web.BaseRequest, kind: str, body: bytes | None,
                      listing_for: Caller | None = None) -> web.StreamResponse:
        """Relay the request (``body`` as read) and the catalog's answer; a namespace listing for ``listing_for``
        keeps only the namespaces it may read."""
        method = request.method
        dropped = HOP_BY_HOP | {name.strip().lower() for name in request.headers.get("Connection", "").split(",")}
        if listing_for is not None:
            dropped |= {"accept-encoding"}  # the gate reads the listing to filter it: plain JSON, please
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in dropped)
        session = self.reads if method in READ_METHODS else self.writes
        assert session is not None, "Gate.start() was not awaited"
        url = URL(self.upstream + request.raw_path, encoded=True)  # as sent: the catalog decodes it
        started = time.perf_counter()
        try:
            async with session.request(method, url, headers=headers, data=body, allow_redirects=False) as upstream:
                data = await upstream.read()
                status, reason, answer_headers = upstream.status, upstream.reason, upstream.headers
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self.metrics.upstream_errors.inc()
            log.warning("502 %s %s: %s", method, request.raw_path.split("?", 1)[0], exc or type(exc).__name__)
            return iceberg_error(502, "ServiceUnavailableException",
                                 f"the catalog behind the gate did not answer: {exc or type(exc).__name__}")
        self.metrics.catalog_seconds.labels(kind).observe(time.perf_counter() - started)
        self.metrics.responses.labels(kind, f"{status // 100}xx").inc()
        relayed = CIMultiDict((k, v) for k, v in answer_headers.items() if k.lower() not in HOP_BY_HOP)
        if method == "HEAD":
            # The size a GET would have, as the catalog said it (a HEAD answer carries no body).
            response = web.StreamResponse(status=status, reason=reason, headers=relayed)
            if (length := answer_headers.get("Content-Length")) is not None:
                response.content_length = int(length)
            return response
        if listing_for is not None and status == 200:
            filtered = catalog_requests.readable_namespaces(listing_for.grants, data)
            if filtered is None:
                return iceberg_error(502, "ServiceUnavailableException", "the catalog's answer to a namespace listing "
                                     "is not one; the gate relays no listing it cannot filter")
            relayed.popall("Content-Encoding", None)
            return web.Response(status=status, reason=reason, body=filtered, headers=relayed)
        return web.Response(status=status, reason=reason, body=data, headers=relayed)

    async def token(self, request: web.BaseRequest) -> web.Response:
        """``POST /v1/oauth/tokens``: client credentials or a token exchange, answered by the gate itself."""
        if request.content_length is not None and request.content_length > MAX_FORM_BYTES:
            return oauth_error(400, "invalid_request", f"the form is larger than {MAX_FORM_BYTES} bytes")
        await continue_if_expected(request)
        form = await request.post()
        grant = str(form.get("grant_type", ""))
        basic = basic_credential(request.headers.get("Authorization"))
        secret = form.get("client_secret")
        identity: Identity | None = None
        if basic is not None or secret is not None:
            client_id, client_secret = basic if basic is not None else (form.get("client_id"), secret)
            identity = self.tokens.client(str(client_id) if client_id else None, str(client_secret))
            if identity is None:
                return self.token_refused(401, "invalid_client", "unknown client or wrong client secret: send the "
                                          "identity's name as client_id and its catalog token as client_secret")
        if grant == CLIENT_CREDENTIALS:
            if identity is None:
                return self.token_refused(401, "invalid_client", "no client credentials: send client_id and "
                                          "client_secret (form fields or HTTP Basic)")
        elif grant == TOKEN_EXCHANGE:
            if identity is None:  # no client credential: the subject token is the proof
                subject_type = str(form.get("subject_token_type", ACCESS_TOKEN_TYPE))
                if subject_type not in SUBJECT_TOKEN_TYPES:
                    return self.token_refused(400, "invalid_request", f"subject_token_type {subject_type} is not "
                                              f"one the gate exchanges ({', '.join(sorted(SUBJECT_TOKEN_TYPES))})")
                caller = self.tokens.caller(str(form.get("subject_token", "")))
                if caller is None:
                    return self.token_refused(400, "invalid_request", "subject_token is not a current token of any "
                                              "identity (expired, or never issued here)")
                identity = self.tokens.by_name[caller.identity]
        else:
            return self.token_refused(400, "unsupported_grant_type", f"grant_type {grant or '(none)'}: the gate "
                                      f"issues tokens for {CLIENT_CREDENTIALS} and {TOKEN_EXCHANGE}")
        self.metrics.decisions.labels(identity.name, "token_issued").inc()
        body = {"access_token": self.tokens.issue(identity.name), "token_type": "bearer",
                "expires_in": self.tokens.lifetime_s, "issued_token_type": ACCESS_TOKEN_TYPE}
        return web.Response(body=json.dumps(body).encode(), content_type="application/json",
                            headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    def token_refused(self, code: int, error: str, description: str) -> web.Response:
        self.metrics.decisions.labels("none", f"token_{error}").inc()
        self.refused(code, "-", "POST", TOKEN_PATH)
        return oauth_error(code, error, description)


class _QuietParseErrors(logging.Filter):
    """One line, not a traceback, for a request the HTTP parser refused (aiohttp answers it 400)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg, record.args = "400 malformed request: %s", (error.message.splitlines()[0],)
            record.exc_info = None
        return True


async def run(config: GateConfig, signing_key: bytes, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set, then close the connections and the pools."""
    gate = Gate(config, signing_key)
    await gate.start()
    # On SIGTERM requests under way get 4 s to finish: within the native target's stop grace (5 s).
    runner = web.ServerRunner(web.Server(gate.handle, access_log=None), handle_signals=False, shutdown_timeout=4.0)
    await runner.setup()
    site = web.TCPSite(runner, config.listen_host, config.listen_port, backlog=config.listen_backlog)
    await site.start()
    host, port = runner.addresses[0][:2]
    log.info("listening on %s:%s (backlog %s), upstream %s", host, port, config.listen_backlog, config.upstream)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await gate.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakehouse_platform.runtime.catalog_gate",
                                     description="bearer tokens and a token endpoint in front of a REST catalog")
    parser.add_argument("--config", required=True, type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[catalog-gate %(asctime)s] %(message)s", datefmt="%Y-%m-%dT%H:%M:%S")
    logging.getLogger("aiohttp.server").addFilter(_QuietParseErrors())
    disable_created_metrics()  # no *_created series: the counters' start time is not a signal here
    try:
        try:
            data = json.loads(args.config.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(str(args.config), [f"not a readable JSON file: {exc}"]) from None
        config = load_config(data, str(args.config))
        key = signing_key_from(os.environ)
    except ConfigError as error:
        sys.stderr.write(f"catalog-gate: refusing to start:\n{error}\n")
        return 2

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await run(config, key, stop)

    uvloop.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
