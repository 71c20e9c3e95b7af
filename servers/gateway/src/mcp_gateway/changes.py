"""A change of the server behind the gateway: proposed by a producer of the same name, made
once after the user's tap by the confirm tool the consent kernel gives its kind.

    model ─► <capability>__<tool>(args) ─► Proposal(kind, summary, {agent, tool, arguments})
    tap ─► pending-actions signs ─► confirm_<kind>(payload, approval) ─► the real call, once
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types
from fastmcp.tools.base import Tool, ToolResult
from pydantic import BaseModel, Field, PrivateAttr

from mcp_gateway.connection import Upstream, lost
from mcp_gateway.store import CallRecords
from mcp_gateway.upstream import Classified, call_summary, result_text, whole_call
from meshkit.consent import ChangeKind, Consent
from meshkit.errors import ModelError
from meshkit.proposals import Approval, Confirmed, NotThisPayload, payload_hash
from meshkit.tool_classes import producer

logger = logging.getLogger(__name__)

MAX_RESULT = 4000
MAX_DETAIL = 4000  # Proposal.detail's bound
MAYBE_DONE = (
    "The call to {tool} was started before and its outcome is not known (the server did not "
    "answer, or the gateway stopped while it ran): it may or may not have happened, and it is "
    "not sent again. Check with the user before proposing it anew."
)
AGENT_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "default": "default",
    "description": "filled in by the assistant",
}


class CallPayload(BaseModel):
    """Exactly the call to make: the approval's signature covers all of it."""

    agent: str = Field(min_length=1, max_length=200)
    tool: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any]


class CallResult(BaseModel):
    message: str = Field(description="What the server answered")
    replayed: bool = False


class ProposeCall(Tool):
    """A change tool of the server behind the gateway, offered as a producer: its call
    returns a proposal and changes nothing."""

    kind: str
    _consent: Consent = PrivateAttr()
    _classified: Classified = PrivateAttr()
    _max_bytes: int = PrivateAttr()

    @classmethod
    def of(cls, classified: Classified, consent: Consent, max_bytes: int) -> ProposeCall:
        tool = classified.tool
        schema = dict(tool.input_schema or {"type": "object"})
        properties = dict(schema.get("properties") or {})
        schema["properties"] = {**properties, "agent": AGENT_SCHEMA}
        options = producer(title=classified.title, context=("agent",))
        said = "⚠️ It may destroy data. " if classified.destructive else ""
        made = cls(
            name=tool.name,
            title=classified.title,
            description=(
                f"{tool.description or classified.title}\n\nThis proposes the call: {said}The "
                "user sees it with buttons and nothing happens until they confirm it."
            ),
            parameters=schema,
            kind=classified.kind,
            **options,
        )
        made._consent = consent
        made._classified = classified
        made._max_bytes = max_bytes
        return made

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        given = dict(arguments)
        agent = str(given.pop("agent", "default") or "default")
        _check(self._classified.tool, given, self._max_bytes)
        name = self._classified.tool.name
        payload = CallPayload(agent=agent, tool=name, arguments=given)
        summary = call_summary(
            self._classified.title, given, destructive=self._classified.destructive
        )
        proposal = await self._consent.propose(
            self.kind, payload, summary=summary, detail=whole_call(name, given)[:MAX_DETAIL]
        )
        return ToolResult(structured_content=proposal.model_dump(mode="json"))


def _check(tool: mcp_types.Tool, arguments: dict[str, Any], max_bytes: int) -> None:
    """What can be told before the tap: the size, and the arguments the schema requires."""
    size = len(json.dumps(arguments, ensure_ascii=False).encode())
    if size > max_bytes:
        raise ModelError(
            f"The arguments are {size} bytes; {tool.name} takes at most {max_bytes}. "
            "Nothing was proposed."
        )
    schema = tool.input_schema or {}
    missing = [name for name in schema.get("required", []) if name not in arguments]
    if missing:
        raise ModelError(f"{tool.name} needs {', '.join(missing)}. Nothing was proposed.")


def change_kind(
    classified: Classified,
    upstream: Upstream,
    records: CallRecords,
    *,
    timeout_s: float,
    clock: Callable[[], float] = time.time,
) -> ChangeKind[CallPayload]:
    """The kind a change tool declares: its executor makes the call at most once."""
    tool = classified.tool.name

    async def execute(change: CallPayload, approval: Approval) -> Confirmed:
        if change.tool != tool:
            raise NotThisPayload(f"The approved call is not a {tool} call. Nothing was changed.")
        digest = payload_hash(change.arguments)
        claim = await records.claim(
            approval.action_id, approval.kind, tool, change.agent, digest, clock()
        )
        if claim.state == "done" and claim.result is not None:
            return Confirmed(claim.result, replayed=True)
        if claim.state == "failed" and claim.result is not None:
            raise ModelError(str(claim.result.get("error", "")))
        if claim.state != "new":
            raise ModelError(MAYBE_DONE.format(tool=tool))
        try:
            client = await upstream.live_client()
        except Exception as error:  # not sent: the claim is given back, a tap may try again
            await records.release(approval.action_id)
            logger.warning("%s: the server behind the gateway cannot start: %s", tool, error)
            raise ModelError(
                f"The {tool} server cannot be reached right now; nothing was done. Try again."
            ) from None
        try:
            with anyio.fail_after(timeout_s):
                answer = await client.call_tool_mcp(tool, change.arguments)
        except Exception as error:
            logger.exception("%s: the call of action %s got no answer", tool, approval.action_id)
            if lost(error):
                await upstream.reset()  # the next call starts the server again
            raise ModelError(MAYBE_DONE.format(tool=tool)) from None
        text = result_text(answer)[:MAX_RESULT]
        if answer.is_error:
            refusal = f"{tool} answered with an error: {text}"[:MAX_RESULT]
            await records.finish(approval.action_id, "failed", {"error": refusal}, clock())
            raise ModelError(refusal)
        result = {"message": text}
        await records.finish(approval.action_id, "done", result, clock())
        return Confirmed(result, replayed=False)

    return ChangeKind(
        classified.kind,
        CallPayload,
        CallResult,
        title=classified.title,
        execute=execute,
        destructive=classified.destructive,
        # A destructive change is never made without the user's own tap: no policy, no grant.
        tap_only=classified.destructive,
        description=f"Make the {tool} call the user confirmed.",
    )
