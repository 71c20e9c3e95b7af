"""``clawmesh usage`` for the operator: a real process on an embedded
DATA_DIR whose memory kept the usage (written through its record_usage tool)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from pydantic import SecretStr

from fakes.serving import credentials_file, free_port, serving
from fakes.usage_records import OTHER, OWNER, call, record, utc, write_fleet
from fakes.world import ROOT, World, clawdia
from mcp_memory.server import build_server as build_memory
from meshkit.http import build_http_app
from meshkit.yaml_config import ConfigError
from orchestrator.cli.usage import Asked, collect

pytestmark = pytest.mark.anyio

OTHERS = ("weather", "toys", "shopping")  # in the fleet's servers; never connected
CREDENTIAL = "memory-credential-for-the-usage-test-0123"

# November 2025 in Paris: from 2025-10-31 23:00 UTC to 2025-11-30 23:00 UTC.
NOVEMBER = [
    call(utc("2025-11-03 09:00"), OWNER, turn_id="t0", model="gpt-5", tokens=(12_000, 0, 2_500)),
    call(utc("2025-11-14 18:00"), OTHER, turn_id="t2", tokens=(3_900, 0, 220)),
    call(utc("2025-11-14 18:01"), OTHER, turn_id="t3", tokens=None),  # no usage reported
    call(
        utc("2025-10-31 23:30"),
        OTHER,
        purpose="scheduled",
        turn_id="fire-1",
        tokens=(8_000, 0, 1_200),
    ),
    call(utc("2025-10-31 22:30"), OWNER, turn_id="t-oct", tokens=(3_000, 0, 300)),  # October
]


async def kept(world: World, *records: dict[str, object]) -> None:
    write_fleet(world.settings.agents)
    async with clawdia(world) as app:
        await record(app.registry, *records)


async def usage(world: World, *args: str, **more: str) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "CLAWMESH_REGISTRY": str(more.pop("registry", world.settings.registry)),
        "CLAWMESH_AGENTS": str(world.settings.agents),
        "DATA_DIR": str(world.data_dir),
        # the test registry's servers
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")])
        ),
    }
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):  # the operator's command needs no LLM
        env.pop(name, None)
    env.update(more)
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [Path(sys.executable).with_name("clawmesh"), "usage", *args],
            env=env,
            cwd=world.data_dir.parent,
            check=False,
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_usage_prints_a_months_table_in_the_agents_zone(world: World) -> None:
    await kept(world, *NOVEMBER)

    code, out, err = await usage(world, "--month", "2025-11")

    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "clawdia (Clawdia) · Europe/Paris · USD"
    assert lines[1].split() == ["month", "2025-11", "cost", "tokens", "calls", "no", "usage",
                                "no", "price"]  # fmt: skip
    rows = [line.split() for line in lines[2:]]
    assert rows[:7] == [
        ["total", "$0.05", "27,820", "4", "1", "0"],
        ["purpose", "scheduled", "$0.0044", "9,200", "1", "0", "0"],
        ["purpose", "turn", "$0.04", "18,620", "3", "1", "0"],
        ["model", "gpt-5", "$0.04", "14,500", "1", "0", "0"],
        ["model", "gpt-5-mini", "$0.0058", "13,320", "3", "1", "0"],
        ["user", OWNER, "$0.04", "14,500", "1", "0", "0"],
        ["user", OTHER, "$0.0058", "13,320", "3", "1", "0"],
    ]
    top = lines[lines.index("  most expensive") + 1 :]
    assert top[0].split()[:5] == ["1.", "$0.04", "2025-11-03", "10:00", "message"]
    assert top[1].split()[:6] == ["2.", "$0.0044", "2025-11-01", "00:30", "scheduled", "prompt"]
    assert err == ""


async def test_usage_as_json_has_the_report_and_the_periods_bounds(world: World) -> None:
    await kept(world, *NOVEMBER)

    code, out, err = await usage(world, "--json", "--agent", "clawdia", "--day", "2025-11-14")

    assert code == 0, err
    [agent] = json.loads(out)["agents"]
    [day] = agent["periods"]
    assert (agent["agent"], agent["timezone"], agent["limits"]) == ("clawdia", "Europe/Paris", [])
    assert (day["period"], day["name"]) == ("day", "2025-11-14")
    assert (day["since"], day["until"]) == (utc("2025-11-13 23:00"), utc("2025-11-14 23:00"))
    total = day["report"]["total"]
    assert (total["calls"], total["tokens"], total["unknown_usage"]) == (2, 4_120, 1)
    assert json.loads(out)["currency"] == "USD"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--month", "2025-13"],
            "Error: --month '2025-13' is not a month - write YYYY-MM, e.g. 2026-11",
        ),
        (
            ["--day", "2025-11-31"],
            "Error: --day '2025-11-31' is not a day - write YYYY-MM-DD, e.g. 2026-11-27",
        ),
        (
            ["--month", "2025-11", "--day", "2025-11-14"],
            "Error: --month and --day: give one of them, not both - see clawmesh usage --help",
        ),
        (
            ["--agent", "nobody"],
            "Error: {agents}: agents: no agent 'nobody'; choose one of ['clawdia'] - fix the file "
            "or variable it names",
        ),
    ],
    ids=["month-13", "day-31-november", "month-and-day", "unknown-agent"],
)
async def test_a_mistake_is_one_line_naming_it_exit_2(
    world: World, args: list[str], line: str
) -> None:
    write_fleet(world.settings.agents)

    code, out, err = await usage(world, *args)

    assert (code, out) == (2, "")
    assert err.splitlines() == [line.format(agents=world.settings.agents)]


async def test_today_and_this_month_come_with_where_each_limit_stands(
    world: World,
) -> None:
    now = utc("2025-11-14 18:30")
    await kept(world, *NOVEMBER)

    output = await collect(world.settings, Asked(), now)

    [agent] = output.agents
    assert [(p.period, p.name, p.report.total.calls) for p in agent.periods] == [
        ("day", "2025-11-14", 2),
        ("month", "2025-11", 4),
    ]
    states = {(s.scope, s.user, s.period): s for s in agent.limits}
    assert sorted(states) == [
        ("agent", None, "day"),
        ("agent", None, "month"),
        ("user", OWNER, "day"),
        ("user", OTHER, "day"),
    ]
    theirs = states[("user", OTHER, "day")]
    assert (theirs.unit, theirs.spent, theirs.limit, theirs.reached) == (
        "tokens",
        4_120,
        10_000,
        False,
    )
    assert theirs.uncounted == 1
    assert theirs.renews_at == "2025-11-15T00:00:00+01:00"
    month = states[("agent", None, "month")]
    assert (round(month.spent, 6), month.allowed, month.uncounted) == (0.045815, 1.0, 1)


async def test_usage_asks_a_memory_server_over_http_with_the_orchestrators_credential(
    world: World, tmp_path: Path
) -> None:
    """The mesh's shape (``docker compose exec orchestrator clawmesh usage``):
    memory over HTTP, the credential from MESH_CREDENTIALS_FILE."""
    await kept(world, *NOVEMBER)
    port = free_port()
    registry = tmp_path / "mesh.yaml"
    registry.write_text(
        "servers:\n"
        f"  memory: {{url: 'http://127.0.0.1:{port}/mcp', role: memory, auth: mesh}}\n"
        + "".join(
            f"  {name}: {{url: 'http://127.0.0.1:9/mcp'}}\n"
            for name in ("weather", "toys", "shopping")
        )
    )
    app = build_http_app(
        build_memory(), token=SecretStr(CREDENTIAL), allowed_hosts=[], max_body_bytes=1 << 20
    )
    (tmp_path / "wrong").mkdir()
    right = credentials_file(tmp_path, {"memory": CREDENTIAL})
    wrong = credentials_file(tmp_path / "wrong", {"memory": "not-the-memory-credential-42"})
    mesh = {"registry": str(registry), "DATA_DIR": str(tmp_path / "no-data")}  # none in-process

    async with serving(app, port=port):
        code, out, err = await usage(
            world, "--month", "2025-11", MESH_CREDENTIALS_FILE=str(right), **mesh
        )
        refused = await usage(world, MESH_CREDENTIALS_FILE=str(wrong), **mesh)

    assert code == 0, err
    assert out.splitlines()[2].split() == ["total", "$0.05", "27,820", "4", "1", "0"]
    assert CREDENTIAL not in out + err
    code, out, err = refused
    assert (code, out) == (1, ""), err
    [line] = err.splitlines()
    assert line.startswith(
        "Error: the memory server gave no answer: not reachable (HTTP error (check the token "
        "and the server's log)) - check that it runs"
    )


async def test_a_registry_without_a_memory_server_is_named_with_its_fix(
    world: World, tmp_path: Path
) -> None:
    write_fleet(world.settings.agents)
    registry = tmp_path / "no-memory.yaml"
    registry.write_text(
        "servers:\n"
        + "".join(f"  {name}: {{url: 'http://127.0.0.1:9/mcp'}}\n" for name in ("memory", *OTHERS))
    )
    settings = world.settings.model_copy(update={"registry": registry})

    with pytest.raises(ConfigError) as raised:
        await collect(settings, Asked(), utc("2025-11-14 18:30"))

    assert str(raised.value) == (
        f"{registry}: servers: no server with 'role: memory', which keeps the usage; add it "
        "(see the shipped config/mcp_servers.yaml)"
    )
