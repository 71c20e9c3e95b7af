"""The consent kernel: a tiny server declares one change kind and gets a confirm tool that needs
a tap (an approval pending-actions signed), performs the change once, and stages a bound
client's proposal for its person through pending-actions, answering the client at once."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from fastmcp import Client, FastMCP
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from fakes.approval_keys import PUBLIC_KEY, SIGNING_ENV, signer, write_signing_key
from fakes.clock import Clock
from fakes.serving import sdk_client, serving
from fakes.tool_calls import call, call_error
from mcp_pending_actions.server import build_server as build_pending
from mcp_pending_actions.settings import PendingSettings
from meshkit.bindings import bind_local_client
from meshkit.consent import ChangeKind, Consent
from meshkit.credentials import Binding, Caller, ClientCredential, new_client, token_digest
from meshkit.http import build_http_app
from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval, Approvals, Confirmed, confirm_once
from meshkit.relay import PendingRelay, Stager
from meshkit.server import create_server
from meshkit.sqlite import SQLiteStore
from meshkit.tool_classes import PRODUCER, READ, RELAY, producer
from meshkit.wire.proposals import ALLOWED_NOTE, NOT_DONE_NOTE, QUEUED_NOTE, Proposal

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
ALICE = Binding("clawdia", "1001")
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), ALICE)
ORCHESTRATOR_TOKEN = "orchestrator-token-consent-0123456789"
SCRIPT_TOKEN, SCRIPT = new_client("script", ALICE)
PENDING_TOKEN = "orchestrator-token-pending-0123456789"
NOTES_RELAY_TOKEN = "notes-relay-token-0123456789"  # the notes server's own, for pending-actions
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
    recipe in docs/development.md has it)."""

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


@pytest.fixture(autouse=True)
def approval_signing_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pending-actions signs with the tests' key; the notes server checks with its half."""
    monkeypatch.setenv(SIGNING_ENV, str(write_signing_key(tmp_path / "keys")))


def write_fleet(path: Path, consent: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump({"agents": {"clawdia": {"consent": consent}}}), "utf-8")


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def notebook(tmp_path: Path) -> Notebook:
    return Notebook(tmp_path / "notes.sqlite3")


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """The fleet file pending-actions reads clawdia's policies from (none: it asks)."""
    path = tmp_path / "agents.yaml"
    write_fleet(path, {})
    return path


@pytest.fixture
def pending(tmp_path: Path, fleet: Path, clock: Clock) -> FastMCP[Any]:
    """The real pending-actions, in-process: the relay's target and the orchestrator's."""
    settings = PendingSettings(data_dir=tmp_path / "pending", agents=fleet)
    return build_pending(settings, clock=clock)


@pytest.fixture
async def actions(pending: FastMCP[Any]) -> AsyncIterator[Client[Any]]:
    """The orchestrator's connection to pending-actions."""
    async with Client(pending) as client:
        yield client


@pytest.fixture
def server(notebook: Notebook, pending: FastMCP[Any], clock: Clock) -> FastMCP[Any]:
    return notes_server(notebook, PendingRelay(pending), clock)


@pytest.fixture
async def orchestrator(server: FastMCP[Any]) -> AsyncIterator[Client[Any]]:
    async with Client(server) as client:
        yield client


@pytest.fixture
async def desktop(
    notebook: Notebook, pending: FastMCP[Any], clock: Clock
) -> AsyncIterator[Client[Any]]:
    """Claude Desktop over stdio (its own notes server process, same data), bound to Alice of
    clawdia (MESH_STDIO_AGENT/_USER)."""
    server = notes_server(notebook, PendingRelay(pending), clock)
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


async def notices(actions: Client[Any]) -> list[dict[str, Any]]:
    """What pending-actions hands the orchestrator's consent channel now."""
    found = await call(actions, "next_notices", consumer="orchestrator", run="r1")
    listed: list[dict[str, Any]] = found["notices"]
    return listed


async def test_the_orchestrators_proposal_is_returned_for_it_to_stage(
    orchestrator: Client[Any], actions: Client[Any]
) -> None:
    proposal = await call(orchestrator, "propose_jot", text="milk", agent="clawdia")
    assert proposal["staged"] is None
    assert proposal["note"] == NOT_DONE_NOTE
    assert await notices(actions) == []


async def test_a_bound_clients_proposal_reaches_its_person_and_waits_for_the_tap(
    desktop: Client[Any], actions: Client[Any], orchestrator: Client[Any], notebook: Notebook
) -> None:
    proposal = await call(desktop, "propose_jot", text="milk")
    staged = proposal["staged"]
    assert (staged["state"], staged["decided_by"], staged["summary"]) == (
        "pending",
        None,
        "Note “milk”",
    )
    assert proposal["note"] == QUEUED_NOTE
    [shown] = await notices(actions)
    assert (shown["type"], shown["agent"], shown["user_id"], shown["chat_id"]) == (
        "show",
        "clawdia",
        "1001",
        "1001",
    )
    assert (shown["client"], shown["client_label"]) == ("claude-desktop", "Claude Desktop")
    [action] = shown["batch"]["actions"]
    assert (action["action_id"], action["server"], action["kind"]) == (
        staged["action_id"],
        "notes",
        "jot",
    )
    waiting = await call(desktop, "get_action", action_id=staged["action_id"])
    assert (waiting["state"], waiting["client"]) == ("pending", "claude-desktop")
    assert notebook.notes() == []  # nothing changes before the tap

    tap = {"user_id": "1001", "chat_id": "1001", "agent": "clawdia"}
    decision = await call(
        actions, "approve", action_id=staged["action_id"], message_key=shown["key"], **tap
    )
    done = await call(
        orchestrator, "confirm_jot", payload=decision["payload"], approval=decision["approval"]
    )
    await call(actions, "complete", action_id=staged["action_id"], result=done)
    followed = await call(desktop, "get_action", action_id=staged["action_id"])
    assert notebook.notes() == [("clawdia", "milk")]
    assert (followed["state"], followed["decided_by"]) == ("done", "tap")
    assert followed["result"] == {"message": "Noted: milk", "replayed": False}


async def test_a_bound_client_cannot_call_the_confirm_tool(desktop: Client[Any]) -> None:
    payload = {"agent": "clawdia", "text": "milk"}
    refused = await call_error(desktop, "confirm_jot", payload=payload, approval="x")
    assert refused.startswith("forbidden (403)")


async def test_a_client_follows_only_its_persons_actions(
    desktop: Client[Any], notebook: Notebook, pending: FastMCP[Any], clock: Clock
) -> None:
    proposal = await call(desktop, "propose_jot", text="milk")
    other = notes_server(notebook, PendingRelay(pending), clock)
    bind_local_client(
        other, Caller("roommate", frozenset({READ, PRODUCER}), Binding("clawdia", "1002"))
    )
    async with Client(other) as roommate:
        refused = await call_error(
            roommate, "get_action", action_id=proposal["staged"]["action_id"]
        )
    assert refused == f"There is no action {proposal['staged']['action_id']!r} of yours here."


async def test_a_kind_the_policy_denies_is_told_to_the_client_and_never_staged(
    desktop: Client[Any], actions: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"notes.jot": "deny"})
    refused = await call_error(desktop, "propose_jot", text="milk")
    assert refused.startswith("Not allowed by clawdia's policy: notes.jot")
    assert await notices(actions) == []


async def test_a_kind_the_policy_allows_is_done_without_a_tap_and_said_so(
    desktop: Client[Any], actions: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"notes.*": "auto"})
    proposal = await call(desktop, "propose_jot", text="milk")
    assert (proposal["staged"]["state"], proposal["staged"]["decided_by"]) == (
        "executing",
        "policy",
    )
    assert proposal["note"] == ALLOWED_NOTE
    [execute] = await notices(actions)
    assert execute["type"] == "execute"
    assert execute["decision"]["approval"]  # minted for the orchestrator, never the client


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
async def http_notes(notebook: Notebook, pending: FastMCP[Any], clock: Clock) -> AsyncIterator[str]:
    """The notes server over HTTP, relaying to pending-actions over HTTP with its own
    credential (a peer: relay tools only, under the name notes)."""
    peer = ClientCredential("notes", (RELAY,), ALICE, token_digest(NOTES_RELAY_TOKEN))
    pending_app = build_http_app(
        pending,
        token=SecretStr(PENDING_TOKEN),
        clients=[peer],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    async with serving(pending_app) as pending_base:
        relay = PendingRelay(f"{pending_base}/mcp", token=NOTES_RELAY_TOKEN)
        app = build_http_app(
            notes_server(notebook, relay, clock),
            token=SecretStr(ORCHESTRATOR_TOKEN),
            clients=[SCRIPT],
            allowed_hosts=[],
            max_body_bytes=1 << 20,
        )
        async with serving(app) as base:
            yield f"{base}/mcp"


async def test_a_script_over_http_with_a_bound_credential_is_staged_too(
    http_notes: str, actions: Client[Any]
) -> None:
    async with sdk_client(http_notes, SCRIPT_TOKEN) as client:
        result = await client.call_tool("propose_jot", {"text": "milk"})
        listed = {tool.name for tool in (await client.list_tools()).tools}
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["staged"]["state"] == "pending"
    [shown] = await notices(actions)
    assert (shown["agent"], shown["user_id"], shown["client"]) == ("clawdia", "1001", "script")
    assert listed == {"propose_jot", "get_action"}  # no confirm tool for a client


async def test_the_orchestrator_over_http_stages_nothing(
    http_notes: str, actions: Client[Any]
) -> None:
    async with sdk_client(http_notes, ORCHESTRATOR_TOKEN) as client:
        result = await client.call_tool("propose_jot", {"text": "milk", "agent": "clawdia"})
    assert result.structured_content is not None
    assert result.structured_content["staged"] is None
    assert await notices(actions) == []


# --- a tap-only kind --------------------------------------------------------------------


def tap_only_notes(notebook: Notebook, relay: Stager, clock: Clock) -> FastMCP[Any]:
    """The notes server with its jot declared tap-only; its producer builds the Proposal
    itself (``offer``) and forgets to say so."""
    mcp = create_server("notes", version="1", instructions="Notes.", stores=[notebook])
    consent = Consent(mcp, "notes", Approvals(PUBLIC_KEY, clock=clock), relay=relay)
    consent.declare(
        ChangeKind("jot", JotPayload, Jotted, title="Jot", execute=notebook.jot, tap_only=True)
    )

    @mcp.tool(**producer(title="Propose a note", context=("agent",)))
    async def propose_jot(text: Text, agent: Agent = "default") -> Proposal:
        """Propose jotting a note."""
        payload = JotPayload(agent=agent, text=text).model_dump()
        return await consent.offer(Proposal(kind="jot", summary=f"Note {text}", payload=payload))

    return mcp


async def test_a_tap_only_kind_is_asked_of_its_person_even_when_the_policy_says_auto(
    notebook: Notebook,
    pending: FastMCP[Any],
    actions: Client[Any],
    fleet: Path,
    clock: Clock,
) -> None:
    write_fleet(fleet, {"notes.*": "auto"})
    server = tap_only_notes(notebook, PendingRelay(pending), clock)
    bind_local_client(server, DESKTOP)

    async with Client(server) as desktop:
        proposal = await call(desktop, "propose_jot", text="milk")

    assert proposal["tap_only"] is True
    assert (proposal["staged"]["state"], proposal["staged"]["decided_by"]) == ("pending", None)
    assert proposal["note"] == QUEUED_NOTE
    [shown] = await notices(actions)
    assert shown["type"] == "show"
    assert notebook.notes() == []


async def test_a_tap_only_kinds_proposal_tells_the_orchestrator_so(
    notebook: Notebook, pending: FastMCP[Any], clock: Clock
) -> None:
    async with Client(tap_only_notes(notebook, PendingRelay(pending), clock)) as orchestrator:
        proposal = await call(orchestrator, "propose_jot", text="milk", agent="clawdia")

    assert (proposal["tap_only"], proposal["staged"]) == (True, None)
