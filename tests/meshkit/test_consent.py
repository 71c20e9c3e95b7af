"""The consent kernel: a tiny server declares one change kind and gets a confirm tool that needs
a tap (an approval pending-actions signed), performs the change once, and stages a bound
client's proposal for its person through pending-actions, answering the client at once."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastmcp import Client, FastMCP
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from fakes.approval_keys import PUBLIC_KEY, signer
from fakes.clock import Clock
from fakes.serving import sdk_client, serving_in_thread
from fakes.tool_calls import call, call_error
from meshkit.bindings import bind_local_client
from meshkit.consent import ChangeKind, Consent
from meshkit.credentials import Binding, Caller, new_client
from meshkit.errors import ModelError
from meshkit.http import build_http_app
from meshkit.proposals import (
    CONFIRMATIONS_SCHEMA,
    NOT_DONE_NOTE,
    SHOWN_NOTE,
    Approval,
    Approvals,
    Confirmed,
    Proposal,
    confirm_once,
)
from meshkit.relay import PendingRelay, Stager
from meshkit.server import create_server
from meshkit.sqlite import SQLiteStore
from meshkit.tool_classes import PRODUCER, READ, producer
from meshkit.wire.pending_actions import ActionStatus, ClientStaged, State

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
ALICE = Binding("clawdia", "1001")
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), ALICE)
ORCHESTRATOR_TOKEN = "orchestrator-token-consent-0123456789"
SCRIPT_TOKEN, SCRIPT = new_client("script", ALICE)
Text = Annotated[str, Field(min_length=1, max_length=200)]
Agent = Annotated[str, Field(min_length=1, max_length=200)]


# --- a new server: one change kind, declared once ---------------------------------------


class JotPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    text: str


class Jotted(BaseModel):
    message: str
    replayed: bool


class Notebook(SQLiteStore):
    """The server's store: a note per approved jot, each action performed once (as the
    README's recipe has it)."""

    SCHEMA = CONFIRMATIONS_SCHEMA + "CREATE TABLE IF NOT EXISTS notes (agent TEXT, text TEXT);"

    async def jot(self, change: JotPayload, approval: Approval) -> Confirmed:
        def perform(db: sqlite3.Connection) -> dict[str, Any]:
            db.execute("INSERT INTO notes VALUES (?, ?)", (change.agent, change.text))
            return {"message": f"Noted: {change.text}"}

        return await self._run(lambda db: confirm_once(db, approval, perform, at=NOW))

    def notes(self) -> list[tuple[str, str]]:
        with closing(sqlite3.connect(self.path)) as db:
            return db.execute("SELECT agent, text FROM notes").fetchall()


def notes_server(notebook: Notebook, relay: Stager | None, clock: Clock) -> FastMCP[Any]:
    mcp = create_server(
        "notes",
        version="1",
        instructions="Notes, jotted after a tap.",
        lifespan=notebook.lifespan,
        stores=[notebook],
    )
    consent = Consent(mcp, "notes", Approvals(PUBLIC_KEY, clock=clock), relay=relay)
    consent.declare(
        ChangeKind(
            "jot",
            JotPayload,
            Jotted,
            title="Jot a note",
            summary=lambda change: f"Note “{change.text}”",
            execute=notebook.jot,
        )
    )

    @mcp.tool(**producer(title="Propose a note", context=("agent",)))
    async def propose_jot(text: Text, agent: Agent = "default") -> Proposal:
        """Propose jotting a note. Nothing is written until the user taps Confirm."""
        return await consent.propose("jot", JotPayload(agent=agent, text=text))

    return mcp


# --- pending-actions' two relay tools, as its contract says (until H2's server lands) ----


class FakePending:
    """stage_for_client and action_status only: what they were asked, and their answers."""

    def __init__(self, *, deny: bool = False) -> None:
        self.staged: list[dict[str, Any]] = []
        self.deny = deny

    def server(self) -> FastMCP[Any]:
        mcp = FastMCP("pending-actions")

        @mcp.tool
        async def stage_for_client(
            server: str, agent: str, user_id: str, client: str, proposal: Proposal
        ) -> ClientStaged:
            if self.deny:
                raise ModelError(f"not allowed by {agent}'s policy: {server}.{proposal.kind}")
            self.staged.append(
                {"server": server, "agent": agent, "user_id": user_id, "client": client}
                | {"proposal": proposal}
            )
            return ClientStaged(
                action_id="act_00000000000a",
                state=State.PENDING,
                expires_at=NOW + 3600,
                summary=proposal.summary,
            )

        @mcp.tool
        async def action_status(
            action_id: str, agent: str, user_id: str, server: str
        ) -> ActionStatus:
            if (agent, user_id, server) != ("clawdia", "1001", "notes"):
                raise ModelError(f"No action {action_id} is yours.")
            return ActionStatus(
                action_id=action_id,
                state=State.PENDING,
                summary="Note “milk”",
                server=server,
                kind="jot",
                client="claude-desktop",
                created_at=NOW,
                expires_at=NOW + 3600,
            )

        return mcp


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def notebook(tmp_path: Path) -> Notebook:
    return Notebook(tmp_path / "notes.sqlite3")


@pytest.fixture
def pending() -> FakePending:
    return FakePending()


@pytest.fixture
def server(notebook: Notebook, pending: FakePending, clock: Clock) -> FastMCP[Any]:
    return notes_server(notebook, PendingRelay(pending.server()), clock)


@pytest.fixture
async def orchestrator(server: FastMCP[Any]) -> AsyncIterator[Client[Any]]:
    async with Client(server) as client:
        yield client


@pytest.fixture
async def desktop(server: FastMCP[Any]) -> AsyncIterator[Client[Any]]:
    """Claude Desktop over stdio, bound to Alice of clawdia (MESH_STDIO_AGENT/_USER)."""
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        yield client


# --- a change needs a tap --------------------------------------------------------------


async def test_a_new_servers_change_needs_a_tap(
    orchestrator: Client[Any], notebook: Notebook, clock: Clock
) -> None:
    proposal = await call(orchestrator, "propose_jot", text="milk", agent="clawdia")
    payload = proposal["payload"]
    assert proposal["summary"] == "Note “milk”"
    assert notebook.notes() == []

    refused = await call_error(orchestrator, "confirm_jot", payload=payload, approval="")
    assert "needs an approval token from a user's Confirm tap" in refused
    forged = signer(clock).mint(
        "act_00000000000b", "notes", "jot", {**payload, "text": "beer"}, agent="clawdia"
    )
    assert "does not match" in await call_error(
        orchestrator, "confirm_jot", payload=payload, approval=forged
    )
    assert notebook.notes() == []

    token = signer(clock).mint("act_00000000000b", "notes", "jot", payload, agent="clawdia")
    done = await call(orchestrator, "confirm_jot", payload=payload, approval=token)
    again = await call(orchestrator, "confirm_jot", payload=payload, approval=token)
    assert done == {"message": "Noted: milk", "replayed": False}
    assert again == {"message": "Noted: milk", "replayed": True}
    assert notebook.notes() == [("clawdia", "milk")]


async def test_the_confirm_tool_keeps_its_name_schema_and_class(orchestrator: Client[Any]) -> None:
    tools = {tool.name: tool for tool in await orchestrator.list_tools()}
    jot = tools["confirm_jot"]
    assert set(jot.input_schema["properties"]) == {"payload", "approval"}
    assert jot.input_schema["properties"]["approval"]["maxLength"] == 500
    assert (jot.meta or {})["fastmcp"]["tags"] == ["confirm"]
    assert "replayed" in (jot.output_schema or {})["properties"]
    follow = tools["get_action"]
    assert (follow.meta or {})["clawmesh"]["clients_only"] is True
    assert (follow.meta or {})["fastmcp"]["tags"] == ["read"]


# --- who proposes decides ---------------------------------------------------------------


async def test_the_orchestrators_proposal_is_returned_for_it_to_stage(
    orchestrator: Client[Any], pending: FakePending
) -> None:
    proposal = await call(orchestrator, "propose_jot", text="milk", agent="clawdia")
    assert proposal["staged"] is None
    assert proposal["note"] == NOT_DONE_NOTE
    assert pending.staged == []


async def test_a_bound_clients_proposal_is_staged_for_its_person_at_once(
    desktop: Client[Any], pending: FakePending, notebook: Notebook
) -> None:
    proposal = await call(desktop, "propose_jot", text="milk")
    assert proposal["staged"] == {
        "action_id": "act_00000000000a",
        "state": "pending",
        "decided_by": None,
        "expires_at": NOW + 3600,
        "summary": "Note “milk”",
    }
    assert proposal["note"] == SHOWN_NOTE
    [staged] = pending.staged
    assert staged["server"] == "notes"
    assert (staged["agent"], staged["user_id"], staged["client"]) == (
        "clawdia",
        "1001",
        DESKTOP.name,
    )
    assert staged["proposal"].payload == {"agent": "clawdia", "text": "milk"}
    assert notebook.notes() == []  # nothing changes before the tap

    status = await call(desktop, "get_action", action_id="act_00000000000a")
    assert status["state"] == "pending"
    assert status["client"] == "claude-desktop"


async def test_a_bound_client_cannot_call_the_confirm_tool(desktop: Client[Any]) -> None:
    payload = {"agent": "clawdia", "text": "milk"}
    refused = await call_error(desktop, "confirm_jot", payload=payload, approval="x")
    assert refused.startswith("forbidden (403)")


async def test_a_kind_the_policy_denies_is_told_to_the_client(
    notebook: Notebook, clock: Clock
) -> None:
    pending = FakePending(deny=True)
    server = notes_server(notebook, PendingRelay(pending.server()), clock)
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        refused = await call_error(client, "propose_jot", text="milk")
    assert refused == "not allowed by clawdia's policy: notes.jot"


async def test_without_a_relay_a_bound_client_is_told_and_nothing_is_staged(
    notebook: Notebook, clock: Clock
) -> None:
    server = notes_server(notebook, None, clock)
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        refused = await call_error(client, "propose_jot", text="milk")
        follow = await call_error(client, "get_action", action_id="act_00000000000a")
    assert "MESH_RELAY_URL is not set" in refused
    assert "Nothing was proposed" in refused
    assert "MESH_RELAY_URL is not set" in follow


async def test_pending_actions_down_is_one_line_for_the_client(
    notebook: Notebook, clock: Clock
) -> None:
    relay = PendingRelay("http://127.0.0.1:9/mcp", token="t", timeout_s=2)
    server = notes_server(notebook, relay, clock)
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        refused = await call_error(client, "propose_jot", text="milk")
    assert refused.startswith("The user cannot be asked right now: pending-actions does not")


@pytest.fixture
def http_notes(server: FastMCP[Any]) -> Iterator[str]:
    app = build_http_app(
        server,
        token=SecretStr(ORCHESTRATOR_TOKEN),
        clients=[SCRIPT],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    with serving_in_thread(app) as base:
        yield f"{base}/mcp"


async def test_a_script_over_http_with_a_bound_credential_is_staged_too(
    http_notes: str, pending: FakePending
) -> None:
    async with sdk_client(http_notes, SCRIPT_TOKEN) as client:
        result = await client.call_tool("propose_jot", {"text": "milk"})
        listed = {tool.name for tool in (await client.list_tools()).tools}
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["staged"]["action_id"] == "act_00000000000a"
    [staged] = pending.staged
    assert (staged["agent"], staged["user_id"], staged["client"]) == ("clawdia", "1001", "script")
    assert listed == {"propose_jot", "get_action"}  # no confirm tool for a client


async def test_the_orchestrator_over_http_stages_nothing(
    http_notes: str, pending: FakePending
) -> None:
    async with sdk_client(http_notes, ORCHESTRATOR_TOKEN) as client:
        result = await client.call_tool("propose_jot", {"text": "milk", "agent": "clawdia"})
    assert result.structured_content is not None
    assert result.structured_content["staged"] is None
    assert pending.staged == []
