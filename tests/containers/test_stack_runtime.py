"""The mesh in its containers on a real Docker engine, with the fakes of Telegram, the LLM
and Open-Meteo as containers on the egress network (tests/containers/compose.fakes.yaml).
The test process drives the fakes through their ports published on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from containers.stack import (
    BOT_TOKEN,
    CAPABILITIES_SKIPPED,
    PROJECT,
    ROOT,
    TEST_ENV,
    USER_ID,
    Stack,
    config,
)

Body = dict[str, Any]
DEADLINE_S = 60.0


def call(url: str, body: Body | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
        return json.load(answer)


def eventually(check: Callable[[], Any], timeout_s: float = DEADLINE_S, what: str = "") -> Any:
    """Until ``check()`` returns something true: state in other containers offers no event."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout_s:g} s: {what}"
        time.sleep(0.2)


class Chat:
    """The user's side of the chat, through the fake Telegram's control routes."""

    def __init__(self, stack: Stack) -> None:
        self.base = stack.url("fake-telegram", 8443)
        self.llm = stack.url("fake-llm", 8080)

    def say(self, text: str) -> None:
        call(
            f"{self.base}/_control/message", {"token": BOT_TOKEN, "user_id": USER_ID, "text": text}
        )

    def tap(self, message_id: int, data: str, *, forged: bool = False) -> None:
        """``forged``: a button no longer on the message (a client that still shows it)."""
        body = {"token": BOT_TOKEN, "user_id": USER_ID, "message_id": message_id, "data": data}
        call(f"{self.base}/_control/tap", {**body, "forged": forged})

    def sent(self) -> list[Body]:
        found: list[Body] = call(f"{self.base}/_control/sent?token={BOT_TOKEN}&chat_id={USER_ID}")
        return found

    def reply_after(self, count: int, timeout_s: float = DEADLINE_S) -> Body:
        """The first message the bot sends after the ``count`` it had sent."""
        sent = eventually(lambda: self.sent()[count:], timeout_s, "a reply from the bot")
        first: Body = sent[0]
        return first

    def open(self) -> int:
        """Open the chat as the user (Telegram lets a bot write to a user who has written to
        it): how many messages the bot has sent, its answer to /start included."""
        before = len(self.sent())
        self.say("/start")
        self.reply_after(before)
        return len(self.sent())

    def from_desktop(self, after: int) -> tuple[Body, str]:
        """The proposal another client made, the first in the chat after the bot's ``after``
        messages, and its Confirm button's data."""

        def proposal() -> Body | None:
            sent = self.sent()[after:]
            return next((m for m in sent if "From Claude Desktop" in m["text"]), None)

        message: Body = eventually(proposal, what="the proposal in the chat, from Claude Desktop")
        buttons = [b for row in message["reply_markup"]["inline_keyboard"] for b in row]
        confirm = next(b["callback_data"] for b in buttons if b["callback_data"][:5] == "pa:c:")
        return message, str(confirm)

    def edits(self, message_id: int) -> list[Body]:
        """The edits of the bot's message ``message_id`` so far."""
        now = next(s for s in self.sent() if s["message_id"] == message_id)
        edits: list[Body] = now["edits"]
        return edits

    def script(self, *steps: Body) -> None:
        call(f"{self.llm}/_control/script", {"steps": list(steps)})

    def llm_requests(self) -> int:
        count: int = call(f"{self.llm}/_control/requests")["count"]
        return count


@pytest.fixture(scope="module")
def chat(stack: Stack) -> Chat:
    return Chat(stack)


def test_a_message_gets_its_tool_using_reply(chat: Chat) -> None:
    before = len(chat.sent())
    chat.say("What's the weather in Paris?")
    reply = chat.reply_after(before)
    assert "Here is what the tool said" in reply["text"]
    # A forecast from weather (via the fake Open-Meteo), not an error about the place.
    assert "temperature_max" in reply["text"], reply["text"]


def test_a_tap_confirms_the_proposed_action(chat: Chat) -> None:
    before = len(chat.sent())
    chat.say("reorder the oat milk")
    proposal = chat.reply_after(before)
    buttons = [b for row in proposal["reply_markup"]["inline_keyboard"] for b in row]
    confirm = buttons[0]["callback_data"]
    requests = chat.llm_requests()
    chat.tap(proposal["message_id"], confirm)

    def edited() -> list[Body]:
        return chat.edits(proposal["message_id"])

    eventually(edited, what="the proposal edited after the tap")
    shown = next(s for s in chat.sent() if s["message_id"] == proposal["message_id"])
    assert "✅" in shown["text"]
    assert chat.llm_requests() == requests  # the tap never reached the model


def test_a_restarted_weather_server_answers_the_next_question(stack: Stack, chat: Chat) -> None:
    stack.compose("restart", "weather")
    stack.compose("up", "--detach", "--wait", "--wait-timeout", "120", "weather")
    before = len(chat.sent())
    chat.say("And the weather in Paris now?")
    assert "temperature_max" in chat.reply_after(before)["text"]


def test_an_orchestrator_killed_mid_turn_replies_once_after_its_restart(
    stack: Stack, chat: Chat
) -> None:
    # The model takes 30 s for the first answer: the orchestrator dies while it waits (the pid
    # is read first, as the docker commands that read it may take seconds on a busy machine).
    chat.script({"slow": 30, "step": {"text": "lost with the crash"}}, {"text": "Answered once."})
    pid = stack.inspect("orchestrator")["State"]["Pid"]
    requests, before = chat.llm_requests(), len(chat.sent())
    chat.say("are you there?")
    eventually(lambda: chat.llm_requests() > requests, what="the turn reaching the model")
    os.kill(pid, signal.SIGKILL)  # a crash, not `docker kill`: the restart policy applies
    # The update's lease runs out (5 s here) and the restarted orchestrator takes it again.
    reply = chat.reply_after(before, timeout_s=240)
    assert reply["text"] == "Answered once."
    stack.compose("up", "--detach", "--wait", "--wait-timeout", "120", "orchestrator")
    assert [s["text"] for s in chat.sent()[before:]] == ["Answered once."]


def test_every_container_runs_read_only_non_root_without_capabilities_and_limited(
    stack: Stack,
) -> None:
    for service in stack.services():
        host = stack.inspect(service)["HostConfig"]
        config = stack.inspect(service)["Config"]
        assert host["ReadonlyRootfs"] is True, service
        assert config["User"] == "10001:10001", service
        assert host["CapDrop"] == ["ALL"], service
        assert not host["CapAdd"], service
        assert "no-new-privileges:true" in host["SecurityOpt"], service
        assert host["Memory"] > 0, service
        assert host["NanoCpus"] > 0, service
        assert host["PidsLimit"] > 0, service


def test_writing_to_the_root_filesystem_fails_in_every_container(stack: Stack) -> None:
    for service in stack.services():
        done = stack.exec(service, "python", "-c", "open('/written', 'w')")
        assert done.returncode != 0, service
        assert "Read-only file system" in done.stderr, service
        assert stack.exec(service, "id", "-u").stdout.strip() == "10001", service


def test_a_service_on_the_internal_network_only_cannot_reach_the_fake_telegram(
    stack: Stack,
) -> None:
    # By its addresses, not its name: a name the internal network's DNS does not know takes
    # 10 s to fail and proves only that; an address shows there is no route. The control
    # connects within milliseconds, so 2 s is no guess.
    networks = stack.inspect("fake-telegram")["NetworkSettings"]["Networks"].values()
    addresses = [network["IPAddress"] for network in networks]
    assert addresses
    connect = (
        "import socket, sys\n"
        "for address in sys.argv[1:]: socket.create_connection((address, 8443), timeout=2)"
    )
    for service in ("memory", "pending-actions", "shopping", "calendar"):
        for address in addresses:
            assert stack.exec(service, "python", "-c", connect, address).returncode != 0, service
    assert stack.exec("telegram-io", "python", "-c", connect, *addresses).returncode == 0


def test_no_service_of_the_stack_publishes_a_port(stack: Stack) -> None:
    for service in stack.services():
        ports = stack.inspect(service)["NetworkSettings"]["Ports"] or {}
        assert all(not bound for bound in ports.values()), (service, ports)


@pytest.mark.anyio
async def test_the_sdk_client_reaches_weather_over_stdio_through_compose_exec(
    stack: Stack,
) -> None:
    command, *args = stack.command
    params = StdioServerParameters(
        command=command,
        args=[*args, "exec", "-T", "weather", "python", "-m", "mcp_weather", "--stdio"],
        env=stack.env,
    )
    async with Client(params) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "get_forecast" in tools
        result = await client.call_tool("get_forecast", {"location": "Paris, France", "days": 1})
        assert not result.is_error, result.content
        assert result.structured_content is not None
        assert result.structured_content["place"]["name"].startswith("Paris")


def secret_values(stack: Stack) -> list[str]:
    """Every secret the stack holds: the user's (from .env) and the mesh credentials."""
    return [
        TEST_ENV["OPENAI_API_KEY"],
        BOT_TOKEN,
        *stack.credentials().values(),
        (stack.secrets / "approval_signing_key.pem").read_text().splitlines()[1],
    ]


def test_no_secret_is_in_any_containers_environment_or_in_compose_config(stack: Stack) -> None:
    # compose.yaml as a user's `docker compose config` shows it (the fakes' overlay is the
    # test's own: the fake Telegram is given the test bot's token on its command line).
    configured = json.dumps(config(stack.env, *stack.generated))  # its capabilities too
    for service in stack.services():
        environment = "\n".join(stack.inspect(service)["Config"]["Env"])
        for secret in secret_values(stack):
            assert secret not in environment, service
            assert secret not in configured
    # They are files under /run/secrets, readable by the service's user, each its own only.
    assert stack.exec("orchestrator", "test", "-r", "/run/secrets/mesh_credentials").returncode == 0
    for service in set(stack.services()) - {"orchestrator"}:
        listed = stack.exec(service, "ls", "/run/secrets").stdout.split()
        assert "mesh_credentials" not in listed, service
        assert "mesh_token_sha256" in listed, service


# From inside the weather container (on the mesh network, as a broken-into weather would be):
# JSON-RPC requests to another server with a bearer token. Prints the tools that
# tools/list gives (or null) and the HTTP status of tools/list and of each tools/call.
CALLS = """
import json, sys, urllib.error, urllib.request
url, token, *tools = sys.argv[1:]
def post(method, params=None):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, None
status, listed = post("tools/list")
names = [tool["name"] for tool in listed["result"]["tools"]] if listed else None
statuses = [status] + [post("tools/call", {"name": name})[0] for name in tools]
print(json.dumps({"tools": names, "statuses": statuses}))
"""
PORTS = {
    "calendar": 8102,
    "shopping": 8103,
    "memory": 8104,
    "pending-actions": 8105,
    "telegram-io": 8106,
    "scheduler": 8107,
}


def from_weather(stack: Stack, server: str, token: str, *tools: str) -> dict[str, Any]:
    return from_service(stack, "weather", server, token, *tools)


def from_service(stack: Stack, origin: str, server: str, token: str, *tools: str) -> dict[str, Any]:
    url = f"http://{server}:{PORTS[server]}/mcp"
    done = stack.exec(origin, "python", "-c", CALLS, url, token, *tools)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_credential_weather_is_sent_opens_no_other_server_for_any_tool(stack: Stack) -> None:
    credentials = stack.credentials()
    stolen = credentials["weather"]  # what the orchestrator sends weather
    refused: dict[str, set[int]] = {}
    for server in PORTS:
        # The server's own credential lists its tools from here: only the token differs.
        tools = from_weather(stack, server, credentials[server])["tools"]
        assert tools, server
        refused[server] = set(from_weather(stack, server, stolen, *tools)["statuses"])
    assert refused == {server: {401} for server in PORTS}


RELAY_TOOLS = {"stage_for_client", "action_status"}


def test_a_servers_relay_token_opens_pending_actions_relay_tools_and_nothing_else(
    stack: Stack,
) -> None:
    # From inside shopping, which holds it: what a broken-into shopping could do with it.
    token = stack.exec("shopping", "cat", "/run/secrets/relay_token").stdout.strip()
    assert token
    environment = "\n".join(stack.inspect("shopping")["Config"]["Env"])
    assert "MESH_RELAY_URL=http://pending-actions:8105/mcp" in environment
    assert token not in environment
    relay = from_service(stack, "shopping", "pending-actions", token, "approve", "next_notices")
    assert relay["statuses"][0] == 200
    assert set(relay["tools"]) <= RELAY_TOOLS  # internal tools are not even listed
    for server in set(PORTS) - {"pending-actions"}:
        assert set(from_service(stack, "shopping", server, token)["statuses"]) == {401}, server
    # Each server with confirm tools holds its own; weather, without any, holds none.
    tokens = {
        server: stack.exec(server, "cat", "/run/secrets/relay_token").stdout.strip()
        for server in ("calendar", "memory", "scheduler", "shopping")
    }
    assert len(set(tokens.values())) == 4
    assert stack.exec("weather", "test", "-e", "/run/secrets/relay_token").returncode != 0


def claude_desktop(stack: Stack, chat: Chat, service: str, module: str) -> StdioServerParameters:
    """Claude Desktop's entry for the containers (README "In Claude Desktop"): ``module``
    over stdio in ``service``'s container, bound to the user, whose chat is opened first
    (Telegram lets a bot write to a user who has written to it)."""
    chat.open()
    command, *args = stack.command
    bound = ["-e", "MESH_STDIO_AGENT=clawdia", "-e", f"MESH_STDIO_USER={USER_ID}"]
    bound += ["-e", "MESH_STDIO_CLIENT=claude-desktop"]
    served = [service, "python", "-m", module, "--stdio"]
    return StdioServerParameters(
        command=command, args=[*args, "exec", "-T", *bound, *served], env=stack.env
    )


@pytest.mark.anyio
async def test_claude_desktop_through_compose_exec_proposes_and_only_the_tap_does_it(
    stack: Stack, chat: Chat
) -> None:
    # Claude Desktop's entry for the containers (README "In Claude Desktop"): shopping over
    # stdio in its container, bound to the user; the proposal reaches the chat through
    # pending-actions (shopping's relay token) and the orchestrator's consent channel.
    params = claude_desktop(stack, chat, "shopping", "mcp_shopping")
    count = len(chat.sent())
    async with Client(params) as client:
        proposed = await client.call_tool(
            "propose_add_to_list", {"name": "container milk", "list_name": "stack"}
        )
        assert not proposed.is_error, proposed.content
        action = (proposed.structured_content or {})["staged"]["action_id"]
        message, confirm = chat.from_desktop(count)
        assert "container milk" in message["text"]
        assert await action_state(client, action) == "pending"  # nothing before the tap
        chat.tap(message["message_id"], confirm)
        await until_done(client, action)
        listed = await client.call_tool("get_list", {"list_name": "stack"})
    names = [
        i["name"] for found in (listed.structured_content or {})["lists"] for i in found["items"]
    ]
    assert names == ["container milk"]


async def action_state(client: Client, action_id: str, tool: str = "get_action") -> str:
    """The action's state, by ``tool`` (``<server>__get_action`` through clawmesh mcp)."""
    result = await client.call_tool(tool, {"action_id": action_id})
    assert not result.is_error, result.content
    return str((result.structured_content or {})["state"])


async def until_done(client: Client, action_id: str, tool: str = "get_action") -> None:
    """Until the tapped action is done, within ``DEADLINE_S``."""
    deadline = time.monotonic() + DEADLINE_S
    while await action_state(client, action_id, tool) != "done":
        assert time.monotonic() < deadline, "the tapped action was not done"
        await anyio.sleep(0.2)


# --- capabilities: servers nobody here wrote, each in its own container behind its gateway
# (the test stack's configuration adds them as an operator does: stack.capabilities_of).


def with_capabilities(stack: Stack) -> None:
    skipped = stack.env.get(CAPABILITIES_SKIPPED)
    if skipped:
        pytest.skip(f"the test stack has no capabilities: {skipped}")


def notes_written(stack: Stack) -> list[str]:
    """What the plain SDK server keeps, in its container (its volume, /data/server)."""
    done = stack.exec(
        "notes",
        "python",
        "-c",
        "import pathlib; p = pathlib.Path('/data/server/notes.json');"
        " print(p.read_text() if p.exists() else '[]')",
    )
    assert done.returncode == 0, done.stderr
    written: list[str] = json.loads(done.stdout)
    return written


def test_a_published_server_reads_a_page_through_its_own_egress(stack: Stack, chat: Chat) -> None:
    with_capabilities(stack)
    page = "http://fake-open-meteo:8090/v1/search?name=Paris&count=1"
    before = len(chat.sent())
    chat.script({"calls": [{"name": "fetch__fetch", "arguments": {"url": page}}]})
    chat.say("what does that page say?")
    reply = chat.reply_after(before)
    assert "Here is what the tool said" in reply["text"], reply["text"]
    assert "Paris" in reply["text"], reply["text"]
    assert "latitude" in reply["text"], reply["text"]


def test_an_unannotated_change_waits_for_the_tap_and_is_done_once(stack: Stack, chat: Chat) -> None:
    with_capabilities(stack)
    before = len(chat.sent())
    chat.script({"calls": [{"name": "notes__add_note", "arguments": {"text": "buy milk"}}]})
    chat.say("note: buy milk")
    proposal = chat.reply_after(before)
    assert 'Notes proposes: ⚠️ add_note: text="buy milk"' in proposal["text"], proposal["text"]
    assert notes_written(stack) == []
    confirm = proposal["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    requests = chat.llm_requests()
    chat.tap(proposal["message_id"], confirm)

    def edited() -> list[Body]:
        return chat.edits(proposal["message_id"])

    eventually(edited, what="the proposal edited after the tap")
    assert "added note 1: buy milk" in edited()[-1]["text"]
    assert notes_written(stack) == ["buy milk"]
    chat.tap(proposal["message_id"], confirm, forged=True)  # a second tap
    eventually(lambda: len(edited()) >= 1 and chat.llm_requests() >= requests)
    assert notes_written(stack) == ["buy milk"]


CALL_ONE = """
import json, sys, urllib.request
url, token, name, arguments = sys.argv[1:]
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": json.loads(arguments)}}
request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
    "Authorization": f"Bearer {token}", "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream"})
with urllib.request.urlopen(request, timeout=10) as answer:
    print(json.dumps(json.load(answer)["result"]))
"""


def test_the_gateway_refuses_a_forged_approval_even_with_the_orchestrators_credential(
    stack: Stack,
) -> None:
    with_capabilities(stack)
    payload = {"agent": "clawdia", "tool": "clear_notes", "arguments": {}}
    forged = "v3.act_0123456789ab.9999999999." + "A" * 86
    done = stack.exec(
        "weather",  # anywhere on the mesh: as a broken-into server would try it
        "python",
        "-c",
        CALL_ONE,
        "http://notes:8110/mcp",
        stack.credentials()["notes"],
        "confirm_clear_notes",
        json.dumps({"payload": payload, "approval": forged}),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is True
    assert "Nothing was changed" in result["content"][0]["text"]


def test_a_capability_holds_its_own_secrets_only_and_its_relay_token_opens_nothing_else(
    stack: Stack,
) -> None:
    with_capabilities(stack)
    for capability in ("fetch", "notes"):
        listed = set(stack.exec(capability, "ls", "/run/secrets").stdout.split())
        assert listed == {
            "mesh_token_sha256",
            "approval_public_key.pem",
            "relay_token",
            "capability_env",
        }, capability
    token = stack.exec("notes", "cat", "/run/secrets/relay_token").stdout.strip()
    assert token
    relay = from_service(stack, "notes", "pending-actions", token, "approve", "next_notices")
    assert set(relay["tools"]) <= RELAY_TOOLS
    for server in set(PORTS) - {"pending-actions"}:
        assert set(from_service(stack, "notes", server, token)["statuses"]) == {401}, server
    # fetch may reach the internet (egress: true); notes is on the internal network only.
    assert set(stack.inspect("notes")["NetworkSettings"]["Networks"]) == {f"{PROJECT}_mesh"}
    assert f"{PROJECT}_egress" in stack.inspect("fetch")["NetworkSettings"]["Networks"]


@pytest.mark.anyio
async def test_another_client_bound_to_the_user_proposes_a_capabilitys_change_for_a_tap(
    stack: Stack, chat: Chat
) -> None:
    # As Claude Desktop reaches shopping (above), a client reaches a capability: its gateway
    # over stdio in its container, bound to the user. The change is staged for that user's
    # chat through pending-actions (the capability's relay token), made once after the tap.
    with_capabilities(stack)
    params = claude_desktop(stack, chat, "notes", "mcp_gateway")
    count = len(chat.sent())
    async with Client(params) as client:
        proposed = await client.call_tool("add_note", {"text": "from the desktop"})
        assert not proposed.is_error, proposed.content
        action = (proposed.structured_content or {})["staged"]["action_id"]
        message, confirm = chat.from_desktop(count)
        assert 'add_note: text="from the desktop"' in message["text"]
        assert await action_state(client, action) == "pending"
        assert "from the desktop" not in notes_written(stack)  # nothing before the tap
        chat.tap(message["message_id"], confirm)
        await until_done(client, action)
    assert notes_written(stack).count("from the desktop") == 1


def in_git(stack: Stack, *words: str) -> str:
    done = stack.exec("git", "git", "-C", "/data/server/repo", *words)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_published_servers_annotated_write_waits_for_the_tap_in_its_container(
    stack: Stack, chat: Chat
) -> None:
    # mcp-server-git from PyPI, Debian's git in its image (debian: [git]), a repository on
    # its volume: git_add declares itself a write (readOnlyHint false), so it is a proposal.
    with_capabilities(stack)
    made = stack.exec("git", "sh", "-c", "git init -q /data/server/repo && echo milk >"
                      " /data/server/repo/list.txt")  # fmt: skip
    assert made.returncode == 0, made.stderr
    before = len(chat.sent())
    add = {"repo_path": "/data/server/repo", "files": ["list.txt"]}
    chat.script({"calls": [{"name": "git__git_add", "arguments": add}]})
    chat.say("stage my list")
    proposal = chat.reply_after(before)
    assert "Git proposes: git_add" in proposal["text"], proposal["text"]
    assert in_git(stack, "diff", "--cached", "--name-only") == ""  # nothing before the tap
    confirm = proposal["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    chat.tap(proposal["message_id"], confirm)

    def edited() -> list[Body]:
        return chat.edits(proposal["message_id"])

    eventually(edited, what="the proposal edited after the tap")
    assert "✅" in edited()[-1]["text"], edited()[-1]["text"]
    assert in_git(stack, "diff", "--cached", "--name-only") == "list.txt"


def test_no_container_gets_an_anonymous_volume(stack: Stack) -> None:
    # An anonymous volume (an image's VOLUME nothing is mounted on) is made at each `up` and
    # left behind by each `down`: only the named volumes of compose.yaml may be mounted.
    resolved = json.loads(stack.compose("config", "--format", "json").stdout)
    named = {f"{PROJECT}_{name}" for name in resolved["volumes"]}
    for service in stack.services():
        mounted = [m for m in stack.inspect(service)["Mounts"] if m["Type"] == "volume"]
        assert all(m["Name"] in named for m in mounted), (service, mounted)
    assert not [m for m in stack.inspect("weather")["Mounts"] if m["Type"] == "volume"]


def test_make_ups_report_shows_a_failing_services_own_last_error(stack: Stack) -> None:
    # make up's last step (containers/up.sh) on the test stack, weather given a bad value.
    log = stack.secrets.parent / "up.log"
    broken = {**stack.env, "WEATHER_UNITS": "furlongs"}
    try:
        done = subprocess.run(
            [str(ROOT / "containers" / "up.sh"), str(log), *stack.command],
            env=broken,
            capture_output=True,
            text=True,
            timeout=400,
            check=False,
        )
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        weather = next(i for i, line in enumerate(lines) if line.split()[0] == "weather")
        assert not lines[weather].endswith("healthy"), lines
        assert (
            lines[weather + 1].strip().startswith("configuration error: WEATHER_UNITS is invalid")
        ), lines
        for service in ("memory", "pending-actions", "telegram-io"):
            assert f"  {service:<16} healthy" in lines, lines
        assert "not every service became healthy" in done.stderr
        assert "Container" not in done.stdout  # compose's own lines went to the log
    finally:
        stack.compose("up", "--detach", "--wait", "--wait-timeout", "120", "weather")
    healthy = subprocess.run(
        [str(ROOT / "containers" / "up.sh"), str(log), *stack.command],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert (
        len(healthy.stdout.splitlines())
        == len(stack.compose("config", "--services").stdout.split()) + 1
    )
    assert healthy.stdout.splitlines()[-1].startswith("all healthy")


def test_every_service_stopped_by_docker_exits_0(stack: Stack) -> None:
    # docker stop sends SIGTERM (through the init); a clean stop is exit 0, not 143.
    try:
        stack.compose("stop", "--timeout", "30")
        stopped = stack.compose("ps", "--all", "--format", "{{.Service}} {{.State}} {{.ExitCode}}")
        codes = {
            service: (state, int(code))
            for service, state, code in (line.split() for line in stopped.stdout.splitlines())
        }
        assert {service: codes[service] for service in stack.services()} == dict.fromkeys(
            stack.services(), ("exited", 0)
        )
    finally:
        stack.compose("up", "--detach", "--wait", "--wait-timeout", "240")
