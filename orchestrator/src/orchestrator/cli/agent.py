"""``clawmesh agent``: the fleet's agents.

    init <id> [--name N] [--timezone TZ]   a persona under agents/<id>/ and its entry
    list [--json]                          the agents of the fleet file
    status [<id>] [--json]                 running or paused, bot, backlog, firings, usage
    stop <id> / start <id>                 pause / resume one agent, without a restart

Pausing is kept by the servers that hold the agent's work (``cli/lifecycle.py``).
"""

from __future__ import annotations

import json
from typing import Annotated

import anyio
from cyclopts import App, Parameter

from meshkit.command import Json, guarded
from orchestrator.cli import agent_init, lifecycle
from orchestrator.cli.mesh import agent_of, fleet, settings

agent_app = App(name="agent")  # its description: clawmesh's (cli/main.py)


@agent_app.command
def init(
    agent: str,
    /,
    *,
    name: Annotated[str | None, Parameter(help="its name (default: the id)")] = None,
    timezone: Annotated[str | None, Parameter(help="IANA, e.g. Europe/Berlin")] = None,
    as_json: Json = False,
) -> None:
    """Create an agent: agents/<id>/ (IDENTITY.md, SOUL.md, USAGE.md) and its entry in
    agents.yaml (comments kept); then put its bot token in .env and restart (make run or
    make up: no compose.yaml edit)."""

    def run() -> None:
        created = agent_init.init(settings(), agent, name, timezone)
        if as_json:
            print(json.dumps({
                "agent": created.agent,
                "name": created.name,
                "persona": str(created.persona),
                "fleet": str(created.fleet),
                "bot_token_env": created.token_variable,
            }))  # fmt: skip
            return
        print(f"Created agent {created.agent} ({created.name}):")
        print(f"  persona  {created.persona}/ (IDENTITY.md, SOUL.md, USAGE.md: edit them)")
        print(f"  fleet    {created.fleet} (entry added)")
        print("Next: create its bot with @BotFather, put the token in .env as")
        print(f"  {created.token_variable}=123456:ABC...")
        print("then restart: make run reads .env; make up copies every *_BOT_TOKEN into")
        print("secrets/bot_tokens for telegram-io and recreates the containers (no compose edit).")

    guarded(run, as_json=as_json)


@agent_app.command(name="list")
def list_agents(*, as_json: Json = False) -> None:
    """The agents of the fleet file (agents.yaml): id, name, time zone, bot token variable."""

    def run() -> None:
        agents = fleet(settings())
        rows = [
            {
                "agent": a.id,
                "name": a.entry.name,
                "timezone": a.entry.timezone,
                "bot_token_env": a.entry.bot_token_env,
                "persona": str(a.entry.persona),
                "servers": list(a.servers),
            }
            for a in agents.values()
        ]
        if as_json:
            print(json.dumps(rows))
            return
        for row in rows:
            token = " / ".join(row["bot_token_env"]) or "(no bot)"
            print(f"{row['agent']:<16} {row['name']:<20} {row['timezone']:<20} {token}")

    guarded(run, as_json=as_json)


@agent_app.command
def status(agent: str | None = None, /, *, as_json: Json = False) -> None:
    """Running or paused, the bot as telegram-io knows it, the last activity, the inbox
    backlog, the next scheduled firings, and the usage if recorded."""

    def run() -> None:
        config = settings()
        agents = fleet(config)
        chosen = [agent_of(config, agents, agent)] if agent else list(agents.values())
        found = anyio.run(lifecycle.statuses, config, chosen)
        if as_json:
            print(json.dumps([s.model_dump() for s in found]))
            return
        for one in found:
            print("\n".join(_status_lines(one)))

    guarded(run, as_json=as_json)


@agent_app.command
def stop(agent: str, /, *, as_json: Json = False) -> None:
    """Pause an agent: it answers nothing and nothing of its fires; its messages wait in
    the inbox. The others go on; a restart keeps it paused."""
    _pause(agent, pause=True, as_json=as_json)


@agent_app.command
def start(agent: str, /, *, as_json: Json = False) -> None:
    """Resume a paused agent: the messages that waited are answered in the order they came."""
    _pause(agent, pause=False, as_json=as_json)


def _pause(agent: str, *, pause: bool, as_json: bool) -> None:
    def run() -> None:
        config = settings()
        agent_of(config, fleet(config), agent)
        done = anyio.run(lifecycle.set_paused, config, agent, pause)
        if as_json:
            print(done.model_dump_json())
            return
        state = "paused" if pause else "running"
        print(f"{agent}: {state}" + ("" if done.changed else " (it was already)"))
        if done.inbox_waiting:
            what = "wait for start" if pause else "are answered now, in order"
            print(f"  {done.inbox_waiting} message(s) in its inbox {what}")
        if done.firings_waiting:
            print(f"  {done.firings_waiting} scheduled firing(s) {'held' if pause else 'due now'}")

    guarded(run, as_json=as_json)


def _status_lines(one: lifecycle.AgentStatus) -> list[str]:
    bot = f"@{one.bot_username}" if one.bot_username else "bot"
    lines = [f"{one.agent} ({one.name}): {one.state}"]
    if one.state == "partly paused":
        lines.append(f"  paused in {', '.join(one.paused_in)} only: run clawmesh agent stop again")
    lines.append(f"  {bot}: {one.bot_state or 'state not known here'}")
    if one.inbox_backlog is not None:
        lines.append(
            f"  inbox: {one.inbox_backlog} waiting; last update {one.last_activity or '-'}"
        )
    for firing in one.next_firings or []:
        lines.append(f"  next: {firing.at}  {firing.what}")
    if one.usage is not None:
        day, month = one.usage.day, one.usage.month
        lines.append(
            f"  usage: today {day.calls} calls, {day.tokens} tokens; "
            f"this month {month.calls} calls, {month.tokens} tokens"
        )
    if one.unavailable:
        lines.append(f"  no answer from: {', '.join(one.unavailable)}")
    return lines
