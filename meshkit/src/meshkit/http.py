"""The HTTP face of a clawmesh server: Streamable HTTP at ``/mcp`` behind a guard.

The guard is plain ASGI in front of the MCP app and answers, in this order:

- 421 when the Host header names a host outside the allowlist (DNS rebinding),
- 403 when an Origin header names a host outside the allowlist,
- 401 on any path but ``/health`` without a known bearer token: the orchestrator's
  credential for this server (``MESH_TOKEN_SHA256``), a ``MESH_CLIENTS`` entry's or a
  ``MESH_PEERS`` entry's (``meshkit.credentials``); the caller it proves is left in the
  ASGI scope for ``meshkit.scopes``, which limits it to its tool classes, and for
  ``meshkit.bindings``, which makes a client speak for the one person it is bound to,
- 413 when the request body exceeds ``MESH_MAX_BODY_BYTES``,
- 408 (and close) when the body has not arrived within ``MESH_BODY_TIMEOUT_S``: a client
  that declares a Content-Length and never sends the body holds nothing for long (the
  request head has its own deadline, ``meshkit.connections``),
- 400 when the request carries more than one Authorization header (which one counts
  would be anyone's guess),
- 400 (a JSON-RPC "parse error") for a body nested deeper than ``MAX_JSON_DEPTH``: no MCP
  message needs it, and parsing 200,000 levels exhausts the recursion limit (a 500),
- 400 (a JSON-RPC "invalid request") for a request whose ``id`` is neither a string nor
  an integer, which the SDK would otherwise take for a notification and answer 202.

The MCP app is stateless and answers in JSON: every request stands alone, so a
restarted server or a long idle night never breaks a client. Tool input schemas
for the SDK's ``Mcp-Param-*`` check come from a startup snapshot
(``meshkit.tool_schemas``) rather than a ``tools/list`` run on every call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio
from fastmcp import FastMCP
from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from meshkit.bindings import ContextBinding
from meshkit.credentials import ClientCredential, Credentials, PeerCredential
from meshkit.scopes import CALLER_KEY, ScopeGate
from meshkit.tool_schemas import ToolSchemaSnapshot

MCP_PATH = "/mcp"
PUBLIC_PATHS = frozenset({"/health"})
MAX_JSON_DEPTH = 64  # an MCP message with its arguments needs about ten levels
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


class BodyTooLarge(Exception):
    pass


class TooDeep(Exception):
    pass


DEFAULT_BODY_TIMEOUT_S = 30.0


def default_allowed_hosts(server_name: str) -> set[str]:
    """Localhost names plus the names a compose service for this server may have."""
    name = server_name.lower()
    return {*LOCAL_HOSTS, name, name.replace("_", "-"), f"mcp-{name.replace('_', '-')}"}


_HOST = re.compile(r"(?:\[([0-9a-f:.]+)\]|([a-z0-9._-]+))(?::[0-9]{1,5})?")


def hostname(value: str) -> str | None:
    """``"Example.org:8101"`` → ``"example.org"``, ``"[::1]:80"`` → ``"::1"``; None for
    anything else (``"[::1]x"``, ``"a:b:c"``, a port that is not a number)."""
    found = _HOST.fullmatch(value.strip().lower())
    return None if found is None else found[1] or found[2]


class MeshGuard:
    """Host, Origin, bearer-token and body-size checks in front of an ASGI app."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: SecretStr | str,
        allowed_hosts: Iterable[str],
        max_body_bytes: int,
        clients: Iterable[ClientCredential] = (),
        peers: Iterable[PeerCredential] = (),
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
        on_request: Callable[[], None] | None = None,
    ) -> None:
        self._app = app
        self._body_timeout_s = body_timeout_s
        self._on_request = on_request
        self._credentials = Credentials(token, clients, peers)
        hosts = {h.lower() for h in allowed_hosts}
        self._any_host = "*" in hosts
        self._hosts = frozenset(hosts - {"*"})
        self._max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._on_request is not None:
            self._on_request()
        headers = _headers(scope)
        if sum(name.lower() == b"authorization" for name, _ in scope["headers"]) > 1:
            await _reject(send, 400, "bad request: more than one Authorization header")
            return
        hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
        if len(hosts) != 1 or not self._host_allowed(hosts[0].decode("latin-1")):
            await _reject(send, 421, "misdirected request: Host not allowed (MESH_ALLOWED_HOSTS)")
            return
        origin = headers.get(b"origin")
        if origin is not None and not self._origin_allowed(origin.decode("latin-1")):
            await _reject(send, 403, "forbidden: Origin is not allowed")
            return
        if scope["path"] not in PUBLIC_PATHS:
            caller = self._credentials.identify(headers.get(b"authorization", b""))
            if caller is None:
                await _reject(
                    send,
                    401,
                    "unauthorized: send Authorization: Bearer <your client token>",
                    extra=[(b"www-authenticate", b'Bearer realm="clawmesh"')],
                )
                return
            scope[CALLER_KEY] = caller
        # Bodies are read (and waited for) only for authenticated requests: a stranger's
        # POST /health with a body that never comes cannot keep a connection busy.
        if scope["method"] in {"GET", "HEAD", "DELETE", "OPTIONS"} or scope["path"] in PUBLIC_PATHS:
            await self._app(scope, receive, send)
            return
        await self._with_body(scope, headers, receive, send)

    async def _with_body(
        self, scope: Scope, headers: dict[bytes, bytes], receive: Receive, send: Send
    ) -> None:
        """The request's body, read (and bounded) here, checked, then handed on."""
        try:
            with anyio.fail_after(self._body_timeout_s):
                body = await self._read_body(headers, receive)
        except BodyTooLarge:
            await _reject(send, 413, f"request body over {self._max_body} bytes")
            return
        except TimeoutError:
            await _reject(
                send,
                408,
                f"request body not received within {self._body_timeout_s:g} s",
                extra=[(b"connection", b"close")],
            )
            return
        try:
            parsed = _parse(body)
        except TooDeep:
            await _reject_rpc(
                send, f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels", code=-32700
            )
            return
        if _bad_id(parsed):
            await _reject_rpc(send, "Invalid Request: id must be a string or an integer")
            return
        await self._app(scope, _replay(body, receive), send)

    def _host_allowed(self, host_header: str) -> bool:
        name = hostname(host_header)
        return name is not None and (self._any_host or name in self._hosts)

    def _origin_allowed(self, origin: str) -> bool:
        scheme, _, rest = origin.partition("://")
        if scheme.lower() not in ("http", "https") or "/" in rest.rstrip("/"):
            return False  # "null", file:, chrome-extension:, or a path after the host
        name = hostname(rest.rstrip("/"))
        return name is not None and (self._any_host or name in self._hosts)

    async def _read_body(self, headers: dict[bytes, bytes], receive: Receive) -> bytes:
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            raise BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                raise BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def build_http_app(
    server: FastMCP[Any],
    *,
    token: SecretStr | str,
    allowed_hosts: Iterable[str],
    max_body_bytes: int,
    clients: Iterable[ClientCredential] = (),
    peers: Iterable[PeerCredential] = (),
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    on_request: Callable[[], None] | None = None,
    zones: Mapping[str, str] | None = None,
) -> ASGIApp:
    """Stateless JSON Streamable HTTP at ``/mcp`` plus the server's custom routes, guarded;
    ``token`` is the orchestrator's credential for this server (as a str its hex SHA-256, as
    a server process has it; the token itself as a SecretStr in in-process tests),
    ``clients`` the others (read/producer only, each bound to an agent and a user);
    ``peers`` the servers that relay their clients' proposals (relay tools only);
    ``on_request`` is told of every HTTP request (meshkit.process_memory trims in quiet moments);
    ``zones`` each agent's time zone, for the clients bound to it (when the server knows)."""
    server.add_middleware(ScopeGate(server))  # first: a tool outside the scopes is refused as such
    server.add_middleware(ContextBinding(server, zones=zones))
    inner = server.http_app(
        path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        host_origin_protection=False,  # the guard does it, with 421/403
    )
    hosts = default_allowed_hosts(server.name) | set(allowed_hosts)
    return MeshGuard(
        ToolSchemaSnapshot(inner, server),
        token=token,
        allowed_hosts=hosts,
        max_body_bytes=max_body_bytes,
        clients=clients,
        peers=peers,
        body_timeout_s=body_timeout_s,
        on_request=on_request,
    )


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope["headers"]}


def _parse(body: bytes) -> Any:
    """The body as JSON (None when it is not JSON: the MCP app answers that itself), or
    TooDeep for nesting beyond ``MAX_JSON_DEPTH``."""
    try:
        parsed = json.loads(body)
    except RecursionError as error:
        raise TooDeep from error
    except ValueError:
        return None
    if _depth_over(parsed, MAX_JSON_DEPTH):
        raise TooDeep
    return parsed


def _depth_over(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (without recursion, like the parser)."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _bad_id(parsed: Any) -> bool:
    """Whether a JSON-RPC message (or one of a batch) carries an id of the wrong type."""
    messages = parsed if isinstance(parsed, list) else [parsed]
    return any(
        isinstance(message, dict)
        and "id" in message
        and (isinstance(message["id"], bool) or not isinstance(message["id"], str | int))
        for message in messages
    )


async def _reject_rpc(send: Send, message: str, *, code: int = -32600) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reject(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
