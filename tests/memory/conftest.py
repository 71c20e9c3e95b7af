from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fakes.clock import Clock
from mcp_memory.conversation_store import ConversationStore
from mcp_memory.service import ConversationService
from mcp_memory.settings import MemorySettings


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings(tmp_path: Path) -> MemorySettings:
    """Every field explicit, so MEMORY_* and DATA_DIR in the environment change nothing."""
    return MemorySettings(
        window_max_items=40,
        window_max_tokens=24_000,
        inactivity_s=3600,
        data_dir=tmp_path / "data",
    )


@pytest.fixture
async def store(settings: MemorySettings) -> AsyncIterator[ConversationStore]:
    store = ConversationStore(settings.db_path)
    yield store
    await store.aclose()


@pytest.fixture
def service(
    settings: MemorySettings, store: ConversationStore, clock: Clock
) -> ConversationService:
    return ConversationService(settings, store, clock=clock)
