"""The memory MCP surface: the conversation's internal tools (conversation_tools), the
tools of remembered rules and notes (memory_tools, their changes on the consent kernel),
clarify (question_tools) and the model's usage (usage_tools, "allow more" on the kernel)."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from fastmcp import FastMCP

from mcp_memory.conversation_store import ConversationStore
from mcp_memory.conversation_tools import add_conversation_tools
from mcp_memory.held import HeldBack
from mcp_memory.memories import SERVER, MemoryService
from mcp_memory.memory_store import MemoryStore
from mcp_memory.memory_tools import add_memory_tools, declare_changes
from mcp_memory.question_tools import add_question_tools
from mcp_memory.questions import QuestionStore
from mcp_memory.recall import Recall
from mcp_memory.service import ConversationService
from mcp_memory.settings import MemorySettings
from mcp_memory.summaries import Summaries
from mcp_memory.turns import TurnContexts
from mcp_memory.usage import UsageService
from mcp_memory.usage_store import UsageStore
from mcp_memory.usage_tools import add_usage_tools, declare_usage_changes
from meshkit.consent import Consent
from meshkit.server import create_server
from meshkit.settings import load_settings

INSTRUCTIONS = (
    "Memory for the clawmesh orchestrator. Each (agent, chat_id) has a conversation of "
    "Responses API input items: read a turn's context (the window, what is remembered, the "
    "question a text answers) before it, append its items after it, reset to start over. "
    "Rules and notes the user asked to keep are remembered only when the user confirms a "
    "propose_remember proposal; list_memories shows them."
)


def build_server(
    settings: MemorySettings | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> FastMCP[Any]:
    """The memory server; ``settings`` default to the environment (embedded mode)."""
    settings = settings or load_settings(MemorySettings)
    store = ConversationStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
    service = ConversationService(settings, store, clock=clock)
    memories = MemoryStore(settings.memories_path, max_bytes=settings.max_db_bytes, clock=clock)
    questions = QuestionStore(settings.questions_path, max_bytes=settings.max_db_bytes, clock=clock)
    usage_store = UsageStore(settings.usage_path, max_bytes=settings.max_db_bytes, clock=clock)

    mcp = create_server(
        "memory",
        version=version("mcp-memory"),
        instructions=INSTRUCTIONS,
        checks={"database": service.check},
        stores=[store, memories, questions, usage_store],
    )
    consent = Consent.from_settings(mcp, SERVER, settings, clock=clock)
    remembered = MemoryService(memories, clock=clock)
    declare_changes(consent, remembered)
    usage = UsageService(usage_store, clock=clock)
    declare_usage_changes(consent, usage)
    add_usage_tools(mcp, usage)
    add_memory_tools(mcp, remembered, Recall(service, store, memories), consent)
    add_question_tools(mcp, questions)
    contexts = TurnContexts(service, remembered, questions)
    summaries = Summaries(service, store, clock=clock)
    held = HeldBack(store, clock=clock)
    add_conversation_tools(mcp, service, contexts, summaries, usage, held=held)
    return mcp
