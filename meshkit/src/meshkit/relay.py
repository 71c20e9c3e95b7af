"""The way a server hands a bound client's proposal to pending-actions, and follows it.

    client ─► <server>.propose_x ─► Consent ─► Stager.stage ─► pending-actions.stage_for_client
    client ─► <server>.get_action ─► Consent ─► Stager.status ─► pending-actions.action_status

A :class:`Stager` is what ``meshkit.consent`` needs; :class:`PendingRelay` is the real one:
an MCP client of pending-actions (``MESH_RELAY_URL``) that presents this server's own relay
credential (``MESH_RELAY_TOKEN`` or ``MESH_RELAY_TOKEN_FILE``), which pending-actions admits
for its ``relay`` tools only, under this server's name. The client side of fastmcp is
imported at the first relayed call: a server no bound client proposes through never loads it
(about 500 modules). The connection it opens then is kept (opening one costs more than a
hundred milliseconds, a call over it a few): pending-actions serves stateless HTTP, so its
restart between two calls changes nothing, and a call that fails drops the connection for
the next one to open anew. A call is never sent twice: staging is not idempotent. An
in-process target (tests) gets a connection per call, closed with it.

Errors, for the client's model (``ModelError``): pending-actions' refusal in its own words
(a policy that denies the kind, an unknown action), or that it cannot be reached now.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from meshkit.errors import ModelError
from meshkit.settings import ApprovalSettings
from meshkit.wire.pending_actions import ActionStatus, ClientStaged
from meshkit.wire.proposals import Proposal

if TYPE_CHECKING:
    from fastmcp import Client, FastMCP

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
RELAY_TIMEOUT_S = 10.0  # pending-actions answers a stage in milliseconds; a client waits ~60 s


class RelayRefused(ModelError):
    """pending-actions refused the call (its message says why, for the model)."""


class RelayUnavailable(ModelError):
    """pending-actions could not be reached, or answered what no version of it sends."""


class Stager(Protocol):
    """Stages a bound client's proposal for its person, and reports how it went."""

    async def stage(
        self, server: str, agent: str, user_id: str, client: str, proposal: Proposal
    ) -> ClientStaged: ...

    async def status(
        self, server: str, agent: str, user_id: str, action_id: str
    ) -> ActionStatus: ...


class PendingRelay:
    """A :class:`Stager` over MCP: ``target`` is pending-actions' URL (``token`` its relay
    credential) or, in tests and embedded mode, the pending-actions server itself."""

    def __init__(
        self,
        target: str | FastMCP[Any],
        *,
        token: str | None = None,
        timeout_s: float = RELAY_TIMEOUT_S,
    ) -> None:
        self._target = target
        self._token = token
        self._timeout_s = timeout_s
        self._kept: Client[Any] | None = None  # over HTTP: the connection calls share
        self._open = AsyncExitStack()  # what closes it
        self._opening = anyio.Lock()

    async def stage(
        self, server: str, agent: str, user_id: str, client: str, proposal: Proposal
    ) -> ClientStaged:
        arguments = {
            "server": server,
            "agent": agent,
            "user_id": user_id,
            "client": client,
            "proposal": proposal.model_dump(mode="json", exclude={"staged"}),
        }
        return _read(ClientStaged, await self._call("stage_for_client", arguments))

    async def status(self, server: str, agent: str, user_id: str, action_id: str) -> ActionStatus:
        arguments = {"action_id": action_id, "agent": agent, "user_id": user_id, "server": server}
        return _read(ActionStatus, await self._call("action_status", arguments))

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            if isinstance(self._target, str):
                client = await self._connection()
                result = await client.call_tool_mcp(tool, arguments)
            else:
                async with self._client() as client:
                    result = await client.call_tool_mcp(tool, arguments)
        except Exception as error:
            logger.warning("cannot reach pending-actions for %s: %s", tool, type(error).__name__)
            await self.aclose()
            raise RelayUnavailable(
                "The user cannot be asked right now: pending-actions does not answer. Nothing "
                "was proposed; try again in a minute."
            ) from None
        if result.is_error:
            said = " ".join(getattr(part, "text", "") for part in result.content).strip()
            raise RelayRefused(said or f"pending-actions refused {tool}. Nothing was proposed.")
        return result.structured_content or {}

    def _client(self) -> Client[Any]:
        from fastmcp import Client  # noqa: PLC0415 (see the module docstring)

        options: dict[str, Any] = {"timeout": self._timeout_s, "init_timeout": self._timeout_s}
        if self._token is not None:
            options["auth"] = self._token
        return Client(self._target, **options)

    async def _connection(self) -> Client[Any]:
        """The kept connection, opened when there is none (or it broke)."""
        async with self._opening:
            if self._kept is None or not self._kept.is_connected():
                await self.aclose()
                client = self._client()
                await self._open.enter_async_context(client)
                self._kept = client
            return self._kept

    async def aclose(self) -> None:
        """Close the kept connection, if any (the next call opens one)."""
        self._kept, opened, self._open = None, self._open, AsyncExitStack()
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._timeout_s):
            try:
                await opened.aclose()
            except Exception:  # a broken connection may fail to close: it is gone anyway
                logger.debug("closing the relay's connection failed", exc_info=True)


def _read(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError:
        logger.error("pending-actions answered a %s that is not one", model.__name__)
        raise RelayUnavailable(
            "pending-actions answered in a form this server does not know (a version "
            "mismatch). Nothing was proposed."
        ) from None


def relay_from(settings: ApprovalSettings) -> PendingRelay | None:
    """The relay a server's settings configure (``MESH_RELAY_URL``); None when unset: a bound
    client's proposal is then refused, saying so."""
    if settings.relay_url is None:
        return None
    credential = settings.relay_credential
    token = None if credential is None else credential.get_secret_value()
    return PendingRelay(settings.relay_url, token=token)
