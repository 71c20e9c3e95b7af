"""The ``world`` fixture: an in-process clawdia with fakes (see fakes/world.py); ``lean``:
Clawdia on Telegram in process, her role servers' calls counted (see fakes/lean.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from openai import AsyncOpenAI
from pydantic import SecretStr

from fakes.clocked import CLOCK
from fakes.lean import NEVER, Lean, lean_app
from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import FakeOpenAI
from fakes.serving import serving
from fakes.world import API_KEY, World, write_config
from orchestrator.channels.telegram_stream import StreamPace
from orchestrator.settings import OrchestratorSettings

FAKE_KEY = "sk-fake-key-12345678"  # openai_client's
MODEL_MEMORY_TOOLS = ("list_memories", "propose_remember", "propose_forget", "recall")


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    llm = FakeOpenAI()
    async with llm.serve() as llm_url, serving(FakeOpenMeteo().app) as open_meteo:
        monkeypatch.setenv("WEATHER_FORECAST_URL", f"{open_meteo}/v1/forecast")
        monkeypatch.setenv("WEATHER_GEOCODING_URL", f"{open_meteo}/v1/search")
        monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
        for name in ("MESH_APPROVAL_SIGNING_KEY_FILE", "MESH_APPROVAL_PUBLIC_KEY_FILE"):
            monkeypatch.delenv(name, raising=False)  # the one key pair in DATA_DIR
        CLOCK.offset = 0.0
        registry, agents = write_config(tmp_path)
        settings = OrchestratorSettings(
            registry=registry,
            agents=agents,
            openai_api_key=SecretStr(API_KEY),
            openai_base_url=llm_url,
            llm_timeout_s=2,
            tool_timeout_s=5,
        )
        world = World(llm, settings, tmp_path / "data")
        yield world
        # DESIGN.md: no request to the LLM ever lists a confirm or internal tool.
        # memory's read and producer tools are the model's; its internal ones are not.
        names = world.requested_tool_names()
        model_memory = {f"memory__{t}" for t in MODEL_MEMORY_TOOLS}
        assert all(
            not name.startswith(("toys__bump", "toys__confirm", "memory__", "pending-actions__"))
            and "__confirm_" not in name
            for name in names - model_memory
        ), names


@pytest.fixture
def pace() -> StreamPace:
    """How a streamed reply changes on screen in ``lean``: never, unless a test says
    (``AT_ONCE``): what is counted is then a reply done within its first second."""
    return NEVER


@pytest.fixture
def streams() -> bool:
    """The ``lean`` agent's ``stream``."""
    return True


@pytest.fixture
async def lean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pace: StreamPace, streams: bool
) -> AsyncIterator[Lean]:
    async with lean_app(tmp_path, monkeypatch, pace=pace, streams=streams) as rig:
        yield rig


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    """The fake OpenAI API, not served (``fake.serve()`` serves it; ``fake.app`` in process)."""
    made = FakeOpenAI()
    yield made
    made.close()


@pytest.fixture
async def openai_client(fake: FakeOpenAI) -> AsyncIterator[AsyncOpenAI]:
    """The real ``openai`` client on ``fake``, served on loopback, without retries."""
    async with (
        fake.serve() as url,
        AsyncOpenAI(api_key=FAKE_KEY, base_url=url, max_retries=0, timeout=10) as made,
    ):
        yield made
