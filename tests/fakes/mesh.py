"""The whole mesh as real processes, for end-to-end tests and bench/e2e.py.

    test process:  fake Telegram, fake OpenAI, fake Open-Meteo   (served on loopback)
    processes:     python -m mcp_telegram_io, mcp_memory, mcp_weather, mcp_shopping,
                   mcp_scheduler,
                   mcp_pending_actions     (HTTP; pending-actions holds the approval signing
                                            key, the others its public key)
                   python -m orchestrator               (the Telegram channel)

Credentials as ``make up`` makes them (``meshkit.secret_files``, under ``<tmp>/secrets``): the
orchestrator reads one per server from its MESH_CREDENTIALS_FILE, each server holds the
digest of its own (MESH_TOKEN_SHA256_FILE); the servers with confirm tools hold a relay token
for pending-actions (MESH_RELAY_TOKEN_FILE, MESH_RELAY_URL), which admits them by
MESH_PEERS_FILE, as compose.yaml wires them. ``Mesh.token(server)`` is the one a test calls
a server with.

``running_embedded`` is ``make run``'s shape instead: one ``python -m orchestrator``
with every server in-process (config/mcp_servers.local.yaml), against the same fakes.

Both take ``root``: the source tree whose code the processes run (default: this one). Another
tree (a reference build, for benchmarks) runs with its ``*/src`` folders first on
PYTHONPATH, ahead of this environment's editable installs, with its own config and agents.

Each process writes its log to ``<tmp>/logs/<name>.log``. ``kill`` sends SIGKILL (a
crash), ``send_signal`` another signal (``exited`` waits for the exit code), ``start`` starts
it again with the same data directory.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import httpx
from mcp.client.stdio import StdioServerParameters

from fakes.approval_keys import PUBLIC_ENV, SIGNING_ENV, write_public_key, write_signing_key
from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import FakeOpenAI
from fakes.serving import free_port, serving
from fakes.telegram_api import FakeTelegram
from meshkit.secret_files import (
    BOT_TOKENS,
    CREDENTIALS,
    DIGEST_PREFIX,
    PEERS,
    RELAY_PREFIX,
    make_secrets,
    read_credentials,
    relay_servers,
)

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-e2e-0123456789-not-a-key"
USER = 4242  # the allowed Telegram user
# Also allowed: a test on a mesh shared with other tests takes one of these (Mesh.new_user),
# so its chat, conversation and messages are its own.
MORE_USERS = tuple(range(5001, 5041))
STRANGER = 777
# Shaped like real tokens (digits ':' 35 characters), so log redaction recognises them.
TOKENS = {
    "clawdia": "7000000001:AAFakeTokenForClawdia0123456789abcde",
    "bob": "7000000002:AAFakeTokenForBob000123456789abcdefg",
}
SERVERS = {
    "weather": "mcp_weather",
    "memory": "mcp_memory",
    "telegram-io": "mcp_telegram_io",
    "shopping": "mcp_shopping",
    "pending-actions": "mcp_pending_actions",
    "scheduler": "mcp_scheduler",
}
ROLES = {"memory", "telegram-io", "pending-actions", "scheduler"}  # names are their roles
PROPOSING = ("memory", "shopping", "scheduler")  # proposes: true, as config/mcp_servers.yaml
NO_JOBS = "agents: {}\n"  # config/schedule.yaml of a test that sets none: no briefing


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    """Until ``check()`` holds: for state in another process, which offers no event."""
    with anyio.fail_after(timeout_s):
        while not await check():  # noqa: ASYNC110
            await anyio.sleep(0.05)


@dataclass
class Service:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    health_url: str | None = None
    process: anyio.abc.Process | None = None
    # Unset: its log's folder, the test's own: never the checkout, whose .env it would read.
    cwd: Path | None = None

    def __post_init__(self) -> None:
        self.cwd = self.cwd or self.log.parent

    # A deadline, not a pace: a first run builds the container images beside the e2e meshes,
    # and a server then takes well over a minute to start on two cores.
    async def start(self, timeout_s: float = 180.0) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = await anyio.open_process(
                self.argv,
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        if self.health_url is not None:
            await self.wait_healthy(timeout_s)

    async def wait_healthy(self, timeout_s: float = 180.0) -> None:
        assert self.health_url is not None
        async with httpx.AsyncClient(timeout=2) as client:
            with anyio.fail_after(timeout_s):
                while True:
                    if self.process is not None and self.process.returncode is not None:
                        raise RuntimeError(f"{self.name} exited: {self.log.read_text()[-2000:]}")
                    try:
                        if (await client.get(self.health_url)).status_code in (200, 503):
                            return
                    except httpx.TransportError:
                        pass
                    await anyio.sleep(0.05)

    async def health(self) -> httpx.Response:
        assert self.health_url is not None
        async with httpx.AsyncClient(timeout=2) as client:
            return await client.get(self.health_url)

    async def kill(self) -> None:
        """SIGKILL: nothing is flushed, nothing is cleaned up."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()

    def send_signal(self, number: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(number)

    async def exited(self, timeout_s: float = 60.0) -> int:
        """The exit code, once the process has exited (within ``timeout_s``)."""
        assert self.process is not None
        with anyio.fail_after(timeout_s):
            return await self.process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            with anyio.move_on_after(10):
                await self.process.wait()
            await self.kill()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


@dataclass
class Mesh:
    telegram: FakeTelegram
    llm: FakeOpenAI
    services: dict[str, Service]
    tmp: Path
    agents: list[str] = field(default_factory=list)
    _users: list[int] = field(default_factory=lambda: list(MORE_USERS))

    @property
    def orchestrator(self) -> Service:
        return self.services["orchestrator"]

    @property
    def credentials(self) -> dict[str, str]:
        """Server → the orchestrator's credential for it (its credentials file)."""
        return read_credentials(self.tmp / "secrets" / CREDENTIALS)

    def token(self, server: str) -> str:
        return self.credentials[server]

    def url(self, server: str) -> str:
        """A server process's ``/mcp`` address."""
        return f"http://127.0.0.1:{self.services[server].env['MCP_PORT']}/mcp"

    def stdio_client(
        self, server: str, user: int, *, agent: str = "clawdia", client: str = "claude-desktop"
    ) -> StdioServerParameters:
        """What Claude Desktop starts for ``server`` (``python -m <package> --stdio``): the
        same data and relay token as the mesh's process, bound to ``user`` of ``agent`` as
        the client ``client`` (MESH_STDIO_AGENT, _USER, _CLIENT)."""
        env = {
            key: value
            for key, value in self.services[server].env.items()
            if key not in {"MCP_PORT", "MESH_CLIENTS"}
        }
        env |= {
            "MESH_STDIO_AGENT": agent,
            "MESH_STDIO_USER": str(user),
            "MESH_STDIO_CLIENT": client,
        }
        package = self.services[server].argv[-1]
        return StdioServerParameters(
            command=sys.executable, args=["-m", package, "--stdio"], env=env, cwd=str(self.tmp)
        )

    def new_user(self) -> int:
        """For the next test on a shared mesh: an allowed user who has not written yet, with
        the fakes' records and scripts cleared (the servers' data stays)."""
        self.telegram.forget()
        self.llm.reset()
        return self._users.pop(0)

    def logs(self) -> str:
        return "\n".join(s.log.read_text(errors="replace") for s in self.services.values())

    @property
    def inbox_file(self) -> Path:
        """telegram-io's database file, in either shape."""
        data = self.tmp / "data"
        if "telegram-io" in self.services:
            return data / "telegram-io" / "telegram-io.sqlite3"
        return data / "telegram-io.sqlite3"

    def unacked(self) -> int:
        """Updates telegram-io holds and nobody has acked (read from its database file)."""
        with sqlite3.connect(f"file:{self.inbox_file}?mode=ro", uri=True) as db:
            (count,) = db.execute("SELECT COUNT(*) FROM updates WHERE acked_at IS NULL").fetchone()
        db.close()
        return int(count)

    async def all_acked(self) -> None:
        """Until every update is acked: the orchestrator is done with them (a turn is acked
        once its reply is sent, after the turn was stored and its buttons bound)."""

        async def done() -> bool:
            return self.unacked() == 0

        await eventually(done)


def _write_registry(tmp: Path, urls: dict[str, str], proposing: tuple[str, ...]) -> Path:
    registry = tmp / "config" / "servers.yaml"
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(
        "servers:\n"
        + "".join(
            f"  {name}: {{url: '{urls[name]}', auth: mesh"
            + (f", role: {name}" if name in ROLES else "")
            + (", proposes: true" if name in proposing else "")
            + "}\n"
            for name in SERVERS
        )
    )
    return registry


def _write_fleet(
    tmp: Path,
    agents: list[str],
    servers: tuple[str, ...] = ("weather", "memory", "shopping"),
    schedule: str = NO_JOBS,
    root: Path = ROOT,
    consent: dict[str, dict[str, str]] | None = None,
    allowance: str | None = None,
    entries: dict[str, str] | None = None,
) -> Path:
    """The fleet file, and beside it schedule.yaml (``CLAWMESH_SCHEDULE``, see _base_env);
    ``consent``: agent → its ``consent:`` rules (change kind → the rule as YAML text);
    ``allowance``: every agent's ``allowance:`` (YAML text); ``entries``: agent → more keys
    of its entry (YAML, ``key: value`` lines)."""
    config = tmp / "config"
    config.mkdir(parents=True, exist_ok=True)
    fleet = ["agents:"]
    for agent in agents:
        persona = root / "agents" / "clawdia"
        if agent != "clawdia":
            persona = tmp / "agents" / agent
            persona.mkdir(parents=True, exist_ok=True)
            (persona / "IDENTITY.md").write_text(f"You are {agent.title()}, a terse assistant.\n")
        fleet += [
            f"  {agent}:",
            f"    name: {agent.title()}",
            f"    bot_token_env: {agent.upper()}_BOT_TOKEN",
            f"    allowed_user_ids: {[str(user) for user in (USER, *MORE_USERS)]}",
            f"    persona: {persona}",
            f"    servers: [{', '.join(servers)}]",
            "    timezone: Europe/Paris",
            "    home: Paris",
        ]
        rules = (consent or {}).get(agent, {})
        fleet += ["    consent:"] if rules else []
        fleet += [f"      {kind}: {rule}" for kind, rule in rules.items()]
        fleet += [f"    allowance: {allowance}"] if allowance else []
        fleet += [f"    {line}" for line in (entries or {}).get(agent, "").splitlines()]
    (config / "schedule.yaml").write_text(schedule)
    agents_file = config / "agents.yaml"
    agents_file.write_text("\n".join(fleet) + "\n")
    return agents_file


async def _import_orders(shopping: Service, path: Path, csv_text: str) -> None:
    await anyio.Path(path).write_text(csv_text)
    done = await anyio.run_process(
        [sys.executable, "-m", "mcp_shopping", "import", str(path), "--agent", "clawdia"],
        env=shopping.env,
        cwd=path.parent,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"import failed: {done.stderr.decode()}{done.stdout.decode()}")


@asynccontextmanager
async def running_mesh(
    tmp: Path,
    *,
    agents: tuple[str, ...] = ("clawdia",),
    lease_s: float = 120.0,
    telegram_io_env: dict[str, str] | None = None,
    pending_env: dict[str, str] | None = None,
    orders_csv: str | None = None,
    revoked: tuple[str, ...] = (),
    orchestrator_env: dict[str, str] | None = None,
    servers: tuple[str, ...] = ("weather", "memory", "shopping"),
    impostors: dict[str, str] | None = None,
    front: Callable[[str, str], str] | None = None,
    root: Path = ROOT,
    schedule: str = NO_JOBS,
    clock_file: Path | None = None,
    server_env: dict[str, dict[str, str]] | None = None,
    consent: dict[str, dict[str, str]] | None = None,
    allowance: str | None = None,
    proposing: tuple[str, ...] = PROPOSING,
    stand_ins: dict[str, str] | None = None,
) -> AsyncIterator[Mesh]:
    """Fakes in this process, the servers and the orchestrator as processes, all started.

    ``servers``: the servers whose tools the agents' model sees. ``impostors``: server →
    the URL of something else that the registry names in its place (not started here).
    ``front``: (server, its URL) → the URL the registry names instead, something that
    passes requests on to it (a counting proxy); the server is started as usual.
    ``root``: the source tree the processes run (see the module's docstring).
    ``schedule``: config/schedule.yaml; ``clock_file``: the scheduler runs on the clock
    this file moves (``python -m fakes.clocked``), so its jobs come due when the test says.

    ``orders_csv`` seeds clawdia's shopping history (``python -m mcp_shopping import``);
    the bots of ``revoked`` agents have tokens Telegram refuses. ``server_env``: server →
    more environment for it (``MESH_CLIENTS``); ``consent``: agent → its consent rules;
    ``allowance``: every agent's allowance (YAML text).
    ``proposing``: the servers whose registry entries say ``proposes: true``.
    ``stand_ins``: server → a module of tests/fakes run as its process instead (``python -m
    fakes.<module>``, with the server's environment): a server broken into.
    """
    async with _serving_fakes(agents) as fakes:
        for agent in revoked:
            fakes.telegram.revoke(TOKENS[agent])
        telegram, llm = fakes.telegram, fakes.llm
        telegram_url, llm_url, weather_api = fakes.telegram_url, fakes.llm_url, fakes.weather_api
        impostors = impostors or {}
        ports = {name: free_port() for name in SERVERS}
        urls = {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
        named = {n: front(n, u) for n, u in urls.items()} if front is not None else urls
        registry = _write_registry(tmp, {**named, **impostors}, proposing)
        secrets = tmp / "secrets"
        # The bot tokens reach telegram-io as in compose: make up's one bot_tokens file.
        tokens = {f"{a.upper()}_BOT_TOKEN": TOKENS[a] for a in agents}
        make_secrets(secrets, registry, tokens)
        agents_file = _write_fleet(tmp, list(agents), servers, schedule, root, consent, allowance)
        base = _base_env(agents_file, root)
        modules = dict(SERVERS)
        path = [base["PYTHONPATH"]] if "PYTHONPATH" in base else []
        tests = {"PYTHONPATH": os.pathsep.join([*path, str(ROOT / "tests")])}
        clocked: dict[str, str] = {}
        if clock_file is not None:
            modules["scheduler"] = "fakes.clocked"
            clocked = {"FAKE_CLOCK_FILE": str(clock_file), **tests}
        for name, module in (stand_ins or {}).items():
            modules[name] = module
        public_key = {PUBLIC_ENV: str(write_public_key(tmp / "keys"))}
        extra = {
            "weather": {
                "WEATHER_FORECAST_URL": f"{weather_api}/v1/forecast",
                "WEATHER_GEOCODING_URL": f"{weather_api}/v1/search",
            },
            "memory": public_key,
            "shopping": public_key,
            "pending-actions": {
                SIGNING_ENV: str(write_signing_key(tmp / "keys")),
                **(pending_env or {}),
            },
            "scheduler": {**public_key, **clocked},
            "telegram-io": {
                "TELEGRAM_BOT_TOKENS_FILE": str(secrets / BOT_TOKENS),
                # Another tree (a benchmark's reference build) may predate the file.
                **(tokens if root != ROOT else {}),
                "TELEGRAM_API_BASE": telegram_url,
                "TELEGRAM_LEASE_S": str(lease_s),
                "TELEGRAM_CONFLICT_BACKOFF_S": "0.5",
                "TELEGRAM_BACKOFF_MAX_S": "1",
                "TELEGRAM_POLL_TIMEOUT_S": "2",
                **(telegram_io_env or {}),
            },
        }
        relay = {
            name: {
                "MESH_RELAY_URL": urls["pending-actions"],
                "MESH_RELAY_TOKEN_FILE": str(secrets / f"{RELAY_PREFIX}{name}"),
            }
            for name in relay_servers(registry, {})
            if name in extra and "pending-actions" not in impostors
        }
        extra["pending-actions"]["MESH_PEERS_FILE"] = str(secrets / PEERS)
        services: dict[str, Service] = {}
        for name, package in modules.items():
            if name in impostors:
                continue
            services[name] = Service(
                name,
                [sys.executable, "-m", package],
                {
                    **base,
                    **extra[name],
                    **relay.get(name, {}),
                    **(tests if name in (stand_ins or {}) else {}),
                    **(server_env or {}).get(name, {}),
                    "MESH_TOKEN_SHA256_FILE": str(secrets / f"{DIGEST_PREFIX}{name}"),
                    "MCP_PORT": str(ports[name]),
                    "DATA_DIR": str(tmp / "data" / name),
                },
                tmp / "logs" / f"{name}.log",
                f"http://127.0.0.1:{ports[name]}/health",
            )
        services["orchestrator"] = Service(
            "orchestrator",
            [sys.executable, "-m", "orchestrator"],
            {
                **base,
                "CLAWMESH_REGISTRY": str(registry),
                "MESH_CREDENTIALS_FILE": str(secrets / CREDENTIALS),
                "OPENAI_API_KEY": API_KEY,
                "OPENAI_BASE_URL": llm_url,
                "LLM_TIMEOUT_S": "30",
                **(orchestrator_env or {}),
            },
            tmp / "logs" / "orchestrator.log",
        )
        if orders_csv is not None:
            await _import_orders(services["shopping"], tmp / "orders.csv", orders_csv)
        mesh = Mesh(telegram, llm, services, tmp, list(agents))
        try:
            async with anyio.create_task_group() as starting:
                for name, service in services.items():
                    if name != "orchestrator":
                        starting.start_soon(service.start)
            # Then the orchestrator, as compose starts it (its servers healthy): one started
            # beside them could find one not yet up and reconnect to it seconds later.
            await services["orchestrator"].start()
            yield mesh
        finally:
            with anyio.CancelScope(shield=True):
                await services["orchestrator"].stop()  # first: it calls the others
                async with anyio.create_task_group() as stopping:
                    for service in services.values():
                        stopping.start_soon(service.stop)


@dataclass
class _Fakes:
    telegram: FakeTelegram
    llm: FakeOpenAI
    telegram_url: str
    llm_url: str
    weather_api: str  # fake Open-Meteo's root


@asynccontextmanager
async def _serving_fakes(agents: tuple[str, ...]) -> AsyncIterator[_Fakes]:
    """Fake Telegram (a bot per agent), fake OpenAI and fake Open-Meteo, served on loopback."""
    telegram, llm, open_meteo = FakeTelegram(), FakeOpenAI(), FakeOpenMeteo()
    llm.on_request = telegram.changed  # a wait on the model's requests wakes at each
    for agent in agents:
        telegram.add_bot(TOKENS[agent], name=agent.title())
    async with (
        telegram.serve() as telegram_url,
        llm.serve() as llm_url,
        serving(open_meteo.app) as weather_api,
    ):
        yield _Fakes(telegram, llm, telegram_url, llm_url, weather_api)


PRIVATE = ("OPENAI_", "TELEGRAM_", "MESH_")  # a developer's own, never for the test mesh


def source_path(root: Path) -> str:
    """PYTHONPATH for the code of ``root``: its packages' source folders."""
    folders = [root / "meshkit" / "src", root / "orchestrator" / "src"]
    folders += sorted((root / "servers").glob("*/src"))
    return os.pathsep.join(str(folder) for folder in folders)


def _base_env(agents_file: Path, root: Path = ROOT) -> dict[str, str]:
    """What every process gets: this environment without real credentials, quiet fastmcp,
    ``root`` as the project root (each runs in a folder of the test's own, where no .env
    is), and for another source tree than this one, that tree first on the import path."""
    own = {} if root == ROOT else {"PYTHONPATH": source_path(root)}
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(PRIVATE)},
        **own,
        "FASTMCP_SHOW_SERVER_BANNER": "false",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "PTB_TIMEDELTA": "true",
        "LOG_LEVEL": "INFO",
        "CLAWMESH_ROOT": str(root),
        "CLAWMESH_AGENTS": str(agents_file),
        "CLAWMESH_SCHEDULE": str(agents_file.parent / "schedule.yaml"),
    }


@asynccontextmanager
async def running_embedded(
    tmp: Path,
    *,
    agents: tuple[str, ...] = ("clawdia",),
    env: dict[str, str] | None = None,
    servers: tuple[str, ...] = ("weather", "memory", "shopping"),
    schedule: str = NO_JOBS,
    root: Path = ROOT,
    capabilities: str = "servers: {}\n",
    consent: dict[str, dict[str, str]] | None = None,
    more_servers: str = "",
    entries: dict[str, str] | None = None,
) -> AsyncIterator[Mesh]:
    """``make run``: one orchestrator process, every server in it, against the fakes
    (``env``: more environment for it; ``schedule``: its config/schedule.yaml; ``root``:
    the source tree it runs). Its registry is a copy of ``root``'s in the test's folder,
    beside it ``capabilities`` as capabilities.yaml (locks: the test's own, written under
    ``tmp/config/capabilities``): a person's capabilities never reach a test.
    ``consent``: agent → its ``consent:`` rules; ``more_servers``: entries added to the
    registry's ``servers:`` (YAML, indented as entries); ``entries``: agent → more keys of
    its fleet entry (``stream: false``)."""
    async with _serving_fakes(agents) as fakes:
        agents_file = _write_fleet(
            tmp, list(agents), servers, schedule, root, consent, entries=entries
        )
        registry = tmp / "config" / "mcp_servers.local.yaml"
        shipped = (root / "config" / "mcp_servers.local.yaml").read_text()
        registry.write_text(shipped.rstrip("\n") + "\n" + more_servers)
        (tmp / "config" / "capabilities.yaml").write_text(capabilities)
        environment = {
            **_base_env(agents_file, root),
            "CLAWMESH_REGISTRY": str(registry),
            "DATA_DIR": str(tmp / "data"),
            "OPENAI_API_KEY": API_KEY,
            "OPENAI_BASE_URL": fakes.llm_url,
            "TELEGRAM_API_BASE": fakes.telegram_url,
            "WEATHER_FORECAST_URL": f"{fakes.weather_api}/v1/forecast",
            "WEATHER_GEOCODING_URL": f"{fakes.weather_api}/v1/search",
            **{f"{a.upper()}_BOT_TOKEN": TOKENS[a] for a in agents},
            **(env or {}),
        }
        orchestrator = Service(
            "orchestrator",
            [sys.executable, "-m", "orchestrator"],
            environment,
            tmp / "logs" / "orchestrator.log",
        )
        mesh = Mesh(fakes.telegram, fakes.llm, {"orchestrator": orchestrator}, tmp, list(agents))
        try:
            await orchestrator.start()
            yield mesh
        finally:
            with anyio.CancelScope(shield=True):
                await orchestrator.stop()
