"""A server killed and started again, end to end: real processes (see test_e2e_telegram.py).
The user asks while the weather server is down and after it is back; /status tells the
truth in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.mesh import TOKENS, USER, Mesh, running_mesh
from fakes.responses_api import call, calls
from fakes.world import answer_from_output

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
WEATHER = call("weather__get_current_weather", location="Paris")


async def ask(mesh: Mesh, text: str) -> str:
    """What clawdia answers to ``text`` (the next message sent to the user)."""
    before = len(mesh.telegram.sent(CLAWDIA, USER))
    mesh.telegram.user_message(CLAWDIA, USER, text)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) > before, 60)
    return mesh.telegram.sent(CLAWDIA, USER)[before].text


async def test_a_weather_server_killed_and_restarted_is_down_then_up_and_used_at_once(
    tmp_path: Path,
) -> None:
    async with running_mesh(tmp_path) as mesh:
        weather = mesh.services["weather"]
        mesh.llm.script(
            calls(WEATHER),
            answer_from_output(lambda out: f"Sorry: {out['error']}"),
            calls(WEATHER),
            answer_from_output(lambda out: f"{out['temperature']} in Paris."),
        )
        status = await ask(mesh, "/status")
        assert "✅ weather (http): up, 3 tools" in status
        assert status.count("Telegram inbox: ") == 1  # the line the app gave the dispatcher
        await weather.kill()
        gone = await ask(mesh, "/status")
        while_down = await ask(mesh, "weather in Paris?")
        await weather.start()
        back = await ask(mesh, "/status")
        after = await ask(mesh, "and now?")
    assert "❌ weather (http): down (connection refused)" in gone
    assert while_down == (
        "Sorry: The weather server is unavailable right now; tell the user and suggest "
        "trying again shortly."
    )
    assert "✅ weather (http): up, 3 tools" in back
    assert after.endswith(" in Paris.")
    assert len(mesh.llm.requests) == 4  # commands never reach the model
