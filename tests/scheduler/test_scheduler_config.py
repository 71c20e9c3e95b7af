"""config/schedule.yaml: a mistake stops the start with the file, the key and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.serving import ServerProcess, sdk_client
from mcp_scheduler.schedule import load_schedule
from meshkit.yaml_config import ConfigError
from scheduler.calls import AGENTS_YAML, settings_for

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    ("body", "where", "fix"),
    [
        ('briefing: {at: "7.30"}', "agents.clawdia.briefing.at", '"HH:MM"'),
        ('briefing: {at: "25:00"}', "agents.clawdia.briefing.at", '"HH:MM"'),
        ('briefing: {at: "07:30", days: [mon, funday]}', "briefing.days", "mon, tue"),
        ('briefing: {at: "07:30", parts: [weather, horoscope]}', "briefing.parts", "weather"),
        ('briefing: {at: "07:30", catch_up: soon}', "briefing.catch_up", "2h or 90m"),
        ('briefing: {at: "07:30", colour: red}', "briefing.colour", "unknown key"),
        ("briefing: {}", "briefing.at", "required; add it"),
        ('prompts: [{name: x, prompt: hi, cron: "61 * * * *"}]', "prompts.0.cron", "0 18 * * sun"),
        (
            'prompts: [{name: x, prompt: hi, cron: "0 9 * * *", at: "09:00"}]',
            "prompts.0",
            "exactly one",
        ),
        ("prompts: [{name: x, prompt: hi}]", "prompts.0", "exactly one of cron or at"),
        ('prompts: [{name: "Big Name", prompt: hi, at: "09:00"}]', "prompts.0.name", "pattern"),
    ],
)
def test_an_invalid_schedule_entry_names_the_file_the_key_and_the_fix(
    tmp_path: Path, body: str, where: str, fix: str
) -> None:
    settings = settings_for(tmp_path, f"agents:\n  clawdia:\n    {body}\n")
    with pytest.raises(ConfigError) as raised:
        load_schedule(tmp_path / "schedule.yaml", settings.agents)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'schedule.yaml'}: ")
    assert where in message
    assert fix in message
    assert "\n" not in message


def test_an_agent_not_in_the_fleet_and_a_name_used_twice_are_refused(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, 'agents:\n  nobody:\n    briefing: {at: "07:30"}\n')
    with pytest.raises(ConfigError, match=r"agents\.nobody: no agent 'nobody'"):
        load_schedule(tmp_path / "schedule.yaml", settings.agents)
    twice = (
        "agents:\n  clawdia:\n    prompts:\n" + '      - {name: a, prompt: hi, at: "09:00"}\n' * 2
    )
    settings = settings_for(tmp_path, twice)
    with pytest.raises(ConfigError, match=r"prompts\[1\].name: 'a' is used twice"):
        load_schedule(tmp_path / "schedule.yaml", settings.agents)


def test_a_missing_schedule_file_says_how_to_get_one(tmp_path: Path) -> None:
    (tmp_path / "agents.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"file not found; create it .* CLAWMESH_SCHEDULE"):
        load_schedule(tmp_path / "nope.yaml", tmp_path / "agents.yaml")


def test_the_shipped_schedule_file_is_valid() -> None:
    jobs = load_schedule(ROOT / "config/schedule.yaml", ROOT / "config/agents.yaml")
    assert [job.id for job in jobs] == ["clawdia/briefing"]


def test_the_server_process_stops_on_an_invalid_schedule_with_one_line(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, 'agents:\n  clawdia:\n    briefing: {at: "7h"}\n')
    env = {
        **os.environ,
        "CLAWMESH_SCHEDULE": str(settings.schedule),
        "CLAWMESH_AGENTS": str(settings.agents),
        "DATA_DIR": str(tmp_path / "data"),
        "MESH_TOKEN_SHA256": "1" * 64,
    }
    done = subprocess.run(
        [sys.executable, "-m", "mcp_scheduler"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"{settings.schedule}: agents.clawdia.briefing.at:" in done.stderr


async def test_the_server_process_serves_its_tools_over_http_with_the_mesh_token(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, 'agents:\n  clawdia:\n    briefing: {at: "07:30"}\n')
    token = "scheduler-process-test-token-2"
    server = ServerProcess(
        "mcp_scheduler",
        tmp_path / "data",
        token,
        CLAWMESH_SCHEDULE=str(settings.schedule),
        CLAWMESH_AGENTS=str(settings.agents),
    )
    try:
        url = server.ready()
        async with sdk_client(f"{url}/mcp", token) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            jobs = await client.call_tool("jobs", {"agent": "clawdia"})
    finally:
        log = server.stop()
    assert {"next_due", "ack", "propose_reminder", "confirm_reminder", "follow_up"} <= tools
    assert jobs.structured_content is not None
    assert jobs.structured_content["jobs"][0]["id"] == "clawdia/briefing"
    assert token not in log
