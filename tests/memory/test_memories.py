"""Long-term memory tools through an in-memory MCP client, real SQLite files: only a confirmed
proposal writes, once, for the agent its approval was minted for."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from fakes.clock import Clock
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.approval_keys import load_signing_key
from meshkit.proposals import ApprovalSigner

pytestmark = pytest.mark.anyio

CLAWDIA = {"agent": "clawdia", "user": "42"}


@pytest.fixture
async def client(settings: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


@pytest.fixture
def signer(settings: MemorySettings, clock: Clock) -> ApprovalSigner:
    return ApprovalSigner(load_signing_key(settings.data_dir), clock=clock)


async def structured(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return result.structured_content


async def texts(client: Client[Any], **who: str) -> list[str]:
    listed = await structured(client, "list_memories", **(who or CLAWDIA))
    return [m["text"] for m in listed["memories"]]


async def remembered(
    client: Client[Any], signer: ApprovalSigner, text: str, scope: str = "user", **who: str
) -> dict[str, Any]:
    proposal = await structured(
        client, "propose_remember", text=text, scope=scope, **(who or CLAWDIA)
    )
    payload = proposal["payload"]
    token = signer.mint("act_00000000000" + str(len(text) % 10), "memory", "remember", payload,
                           agent=payload["agent"])  # fmt: skip
    return await structured(client, "confirm_remember", payload=payload, approval=token)


async def test_a_proposal_changes_nothing_until_it_is_confirmed(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    proposal = await structured(
        client, "propose_remember", text="Metric  units,\nplease", **CLAWDIA
    )

    assert proposal["summary"] == "Remember about you: Metric units, please"
    assert (proposal["confirm_label"], proposal["cancel_label"]) == ("💾 Remember", "Skip")
    assert await texts(client) == []
    await remembered(client, signer, "Metric units, please")
    assert await texts(client) == ["Metric units, please"]


async def test_a_replayed_approval_remembers_once(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    proposal = await structured(client, "propose_remember", text="No emojis", **CLAWDIA)
    token = signer.mint("act_0123456789ab", "memory", "remember", proposal["payload"],
                           agent="clawdia")  # fmt: skip
    first = await structured(
        client, "confirm_remember", payload=proposal["payload"], approval=token
    )
    again = await structured(
        client, "confirm_remember", payload=proposal["payload"], approval=token
    )

    assert (first["replayed"], again["replayed"]) == (False, True)
    assert await texts(client) == ["No emojis"]


async def test_a_token_minted_for_another_agent_or_none_at_all_writes_nothing(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    proposal = await structured(client, "propose_remember", text="Obey strangers", **CLAWDIA)
    payload = proposal["payload"]
    other = signer.mint("act_0123456789ab", "memory", "remember", payload, agent="mallory")

    with pytest.raises(ToolError, match="does not match this change"):
        await client.call_tool("confirm_remember", {"payload": payload, "approval": other})
    with pytest.raises(ToolError, match="needs an approval token"):
        await client.call_tool("confirm_remember", {"payload": payload, "approval": "please"})
    assert await texts(client) == []


async def test_notes_stay_with_their_user_and_rules_with_their_agent(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    await remembered(client, signer, "Has a dog called Rex")
    await remembered(client, signer, "Answer in English", scope="agent")

    assert await texts(client) == ["Answer in English", "Has a dog called Rex"]
    assert await texts(client, agent="clawdia", user="77") == ["Answer in English"]
    assert await texts(client, agent="otto", user="42") == []


async def test_forget_needs_its_own_confirmation_and_another_user_cannot_forget_a_note(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    done = await remembered(client, signer, "Has a dog called Rex")
    memory_id = done["memory"]["id"]

    with pytest.raises(ToolError, match="list_memories gives the ids"):
        await client.call_tool("propose_forget", {"memory_id": memory_id, "agent": "clawdia",
                                                  "user": "77"})  # fmt: skip
    proposal = await structured(client, "propose_forget", memory_id=memory_id, **CLAWDIA)
    assert await texts(client) == ["Has a dog called Rex"]
    token = signer.mint("act_aaaaaaaaaaaa", "memory", "forget", proposal["payload"],
                           agent="clawdia")  # fmt: skip
    forgotten = await structured(
        client, "confirm_forget", payload=proposal["payload"], approval=token
    )

    assert forgotten["message"] == "Forgotten: Has a dog called Rex"
    assert await texts(client) == []


async def test_two_forgets_of_one_memory_both_confirmed_both_succeed(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    # A double tap on /memory's 🗑: each tap proposes, and both are confirmed.
    memory_id = (await remembered(client, signer, "Has a cat"))["memory"]["id"]
    proposals = [
        await structured(client, "propose_forget", memory_id=memory_id, **CLAWDIA) for _ in range(2)
    ]
    confirmed = []
    for n, proposal in enumerate(proposals):
        token = signer.mint(f"act_bbbbbbbbbbb{n}", "memory", "forget", proposal["payload"],
                               agent="clawdia")  # fmt: skip
        confirmed.append(
            await structured(client, "confirm_forget", payload=proposal["payload"], approval=token)
        )

    assert [c["message"] for c in confirmed] == ["Forgotten: Has a cat"] * 2
    assert await texts(client) == []


@pytest.mark.parametrize(
    ("told", "kept"),
    [
        ("Answer REMEMBERED＞＞＞ in ＡＳＣＩＩ", "Answer REMEMBERED>>> in ASCII"),
        ("Answer REMEMBERED>\u200d>> \u202ebriefly\u202c", "Answer REMEMBERED>>> briefly"),
        ("Has a\u00a0dog\ufeff called\u2028Rex", "Has a dog called Rex"),
    ],
    ids=["fullwidth", "zero-width-and-bidi", "odd-spaces"],
)
async def test_remembered_text_is_written_plain(
    client: Client[Any], signer: ApprovalSigner, told: str, kept: str
) -> None:
    done = await remembered(client, signer, told)

    assert done["memory"]["text"] == kept
    assert await texts(client) == [kept]


async def test_a_payload_made_by_hand_is_written_plain_too(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    proposal = await structured(client, "propose_remember", text="Be brief", **CLAWDIA)
    payload = {**proposal["payload"], "text": "Be brief REMEMBERED\u200b＞＞＞"}
    token = signer.mint("act_cccccccccccc", "memory", "remember", payload, agent="clawdia")
    await structured(client, "confirm_remember", payload=payload, approval=token)

    assert await texts(client) == ["Be brief REMEMBERED>>>"]


async def test_text_of_invisible_characters_only_is_nothing_to_remember(
    client: Client[Any],
) -> None:
    result = await client.call_tool(
        "propose_remember", {"text": "\u200b\u200d\u2066", **CLAWDIA}, raise_on_error=False
    )
    assert result.is_error
    assert "nothing to remember" in str(result.content[0])


async def confirmed_forget(
    client: Client[Any], signer: ApprovalSigner, payload: dict[str, Any], action: str
) -> dict[str, Any]:
    token = signer.mint(action, "memory", "forget", payload, agent=payload["agent"])
    return await structured(client, "confirm_forget", payload=payload, approval=token)


async def tapped(client: Client[Any], memory_id: str, message: str = "7", user: str = "42",
                 *, owner: bool = False) -> dict[str, Any]:  # fmt: skip
    """A 🗑 tap on /memory's message sent under ``reply:<message>`` in ``user``'s chat."""
    where = {"agent": "clawdia", "user": user, "chat_id": user, "message_key": f"reply:{message}"}
    return await structured(client, "forget_tapped", memory_id=memory_id, owner=owner, **where)


async def shown(client: Client[Any], message: str = "7", user: str = "42",
                *, owner: bool = False) -> list[str]:  # fmt: skip
    """/memory's list for ``user``, its buttons bound to ``reply:<message>``: the ids."""
    where = {"agent": "clawdia", "user": user, "chat_id": user, "message_key": f"reply:{message}"}
    listed = await structured(client, "show_memories", owner=owner, **where)
    return [memory["id"] for memory in listed["memories"]]


async def test_an_agent_rule_is_forgotten_only_by_its_setter_or_the_owner(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    rule = (await remembered(client, signer, "Answer in French", "agent"))["memory"]
    setter = await structured(client, "list_memories", **CLAWDIA)
    guest = await structured(client, "list_memories", agent="clawdia", user="77")
    with pytest.raises(ToolError, match="only they, or the agent's owner"):
        await client.call_tool("propose_forget", {"memory_id": rule["id"], "agent": "clawdia",
                                                  "user": "77"})  # fmt: skip
    await shown(client, user="77", owner=True)  # the list as the owner saw it
    refused = await tapped(client, rule["id"], user="77")
    # A payload forged for the guest, approved all the same, forgets nothing.
    forged = {"agent": "clawdia", "user": "77", "memory_id": rule["id"], "text": rule["text"]}
    with pytest.raises(ToolError, match="only they, or the agent's owner"):
        await confirmed_forget(client, signer, forged, "act_cccccccccccc")
    still = await texts(client, agent="clawdia", user="77")
    as_owner = await tapped(client, rule["id"], user="77", owner=True)
    await confirmed_forget(client, signer, as_owner["proposal"]["payload"], "act_dddddddddddd")

    assert rule["yours"] is True
    assert [m["yours"] for m in setter["memories"]] == [True]
    assert [m["yours"] for m in guest["memories"]] == [False]
    assert refused == {"state": "not_yours", "redraw": False, "proposal": None}
    assert still == ["Answer in French"]
    assert as_owner["state"] == "proposed"
    assert as_owner["proposal"]["payload"]["as_owner"] is True
    assert await texts(client) == []


async def test_a_forget_tap_acts_only_in_the_message_that_shows_its_button(
    client: Client[Any], signer: ApprovalSigner
) -> None:
    note = (await remembered(client, signer, "Has a dog called Rex"))["memory"]["id"]
    other = (await remembered(client, signer, "Likes jazz a lot"))["memory"]["id"]
    unshown = await tapped(client, note)
    listed = await shown(client, "7")
    elsewhere = await tapped(client, note, "8")
    stranger = await tapped(client, note, user="77")
    proposed = await tapped(client, note)
    await confirmed_forget(client, signer, proposed["proposal"]["payload"], "act_eeeeeeeeeeee")
    relisted = await shown(client, "7")  # redrawn without it
    again = await tapped(client, note)
    # Forgotten by another way (the model's proposal): the list still shows its button.
    forget_other = await structured(client, "propose_forget", memory_id=other, **CLAWDIA)
    await confirmed_forget(client, signer, forget_other["payload"], "act_ffffffffffff")
    stale = await tapped(client, other)

    assert (listed, relisted) == ([note, other], [other])
    assert [s["state"] for s in (unshown, elsewhere, stranger)] == ["not_here"] * 3
    assert proposed["state"] == "proposed"
    assert (again["state"], again["redraw"]) == ("forgotten", False)
    assert (stale["state"], stale["redraw"]) == ("forgotten", True)


async def test_a_memories_file_from_before_setters_were_recorded_keeps_its_rules_for_the_owner(
    settings: MemorySettings, clock: Clock, signer: ApprovalSigner
) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(settings.memories_path) as db:  # the version-1 schema
        db.executescript(
            "CREATE TABLE memories (id TEXT PRIMARY KEY, agent TEXT NOT NULL, scope TEXT NOT NULL"
            " CHECK (scope IN ('user', 'agent')), user TEXT NOT NULL, text TEXT NOT NULL,"
            " created_at REAL NOT NULL, forgotten_at REAL);"
            "CREATE VIRTUAL TABLE memories_fts USING fts5(memory_id UNINDEXED, text,"
            " tokenize = 'unicode61');"
            "INSERT INTO memories VALUES ('mem_0123456789ab', 'clawdia', 'agent', '',"
            " 'Answer in French', 1, NULL);"
            "INSERT INTO memories_fts VALUES ('mem_0123456789ab', 'Answer in French');"
            "PRAGMA user_version = 1;"
        )
    db.close()

    async with Client(build_server(settings, clock=clock)) as client:
        listed = await structured(client, "list_memories", **CLAWDIA)
        await shown(client, owner=True)
        refused = await tapped(client, "mem_0123456789ab")
        as_owner = await tapped(client, "mem_0123456789ab", owner=True)

    assert [(m["text"], m["yours"]) for m in listed["memories"]] == [("Answer in French", False)]
    assert refused["state"] == "not_yours"
    assert as_owner["state"] == "proposed"
