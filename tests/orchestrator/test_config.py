"""Configuration loads the shipped files and explains every mistake: file, key, fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.checkout import orchestrator, shipped
from meshkit.yaml_config import ConfigError
from orchestrator.config.fleet import load_fleet
from orchestrator.config.registry import load_registry


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "config" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def persona(tmp_path: Path) -> None:
    (tmp_path / "agents" / "a").mkdir(parents=True)
    (tmp_path / "agents" / "a" / "IDENTITY.md").write_text("I am A.")


def test_the_shipped_configuration_loads(tmp_path: Path) -> None:
    project = shipped(tmp_path)
    for registry_file in ("mcp_servers.yaml", "mcp_servers.local.yaml"):
        registry = load_registry(project / "config" / registry_file, environ={})
        fleet = load_fleet(project / "config" / "agents.yaml", registry, environ={}, root=project)
        clawdia = fleet["clawdia"]
        assert registry[clawdia.servers[0]] is not None
        assert clawdia.entry.name == "Clawdia"
        assert "weather" in clawdia.servers
        assert "calendar" in clawdia.servers
        assert "Clawdia" in clawdia.persona.text()
        assert clawdia.entry.allowed_user_ids == []  # ${TELEGRAM_USER_ID:-} unset


def test_variables_are_substituted_with_defaults_and_required_ones(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.yaml",
        "servers:\n  w:\n    url: ${W_URL:-http://w:1/mcp}\n"
        "    token: ${W_TOKEN}\n    description: ${DESC:?describe it}\n",
    )
    entries = load_registry(path, environ={"W_TOKEN": "tok", "DESC": "d"})
    assert entries["w"].url == "http://w:1/mcp"
    assert entries["w"].token == "tok"
    with pytest.raises(
        ConfigError,
        match=r"servers\.w\.description: \$\{DESC\} is not set; "
        r"export DESC=\.\.\. \(describe it\)",
    ):
        load_registry(path, environ={"W_TOKEN": "tok"})


def test_an_unset_variable_without_a_default_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", "servers:\n  w:\n    url: ${W_URL}\n")
    with pytest.raises(ConfigError) as error:
        load_registry(path, environ={})
    assert str(error.value) == (
        f"{path}: servers.w.url: ${{W_URL}} is not set; export W_URL=..., or write "
        "${W_URL:-} in the file if it may be empty"
    )
    assert load_registry(path, environ={"W_URL": "http://w:1/mcp"})["w"].url == "http://w:1/mcp"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("servers:\n  bad__name:\n    url: http://x/mcp\n", "servers.bad__name: a server name"),
        (
            "servers:\n  w:\n    url: http://x/mcp\n    command: [a]\n",
            "servers.w: give exactly one of url, command, module or package",
        ),
        ("servers:\n  w:\n    urll: http://x/mcp\n", "servers.w.urll: unknown key"),
        ("servers:\n  w:\n    module: nocolon\n", "module must look like"),
        ("servers: [1, 2]\n", "servers: expected a mapping"),
        ("servers:\n  w: {url: [\n", "not valid YAML"),
        ("servers:\n  w: {url: 'http://w:1/mcp', port: 8121}\n", "port is for package entries"),
    ],
)
def test_registry_mistakes_name_the_file_and_key(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, "r.yaml", body)
    with pytest.raises(ConfigError) as caught:
        load_registry(path, environ={})
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    servers: [nope]\n",
            "agents.a.servers: 'nope' is not in the registry",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    timezone: Mars/Base\n",
            "agents.a.timezone: 'Mars/Base' is not an IANA timezone",
        ),
        ("agents:\n  a:\n    persona: agents/a\n", "agents.a.name: required"),
        ("agents:\n  a:\n    name: A\n    persona: agents/missing\n", "has no IDENTITY.md"),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    consent: {w.add: maybe}\n",
            "agents.a.consent.w.add: 'maybe' is not a policy: use ask, auto or deny",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    consent: {shop.add: auto}\n",
            "agents.a.consent.shop.add: 'shop' is not in the registry, so this rule would never "
            "apply",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n"
            "    consent: {w.add: {policy: auto, grant: 1h}}\n",
            "agents.a.consent.w.add: grant goes with policy ask only",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n"
            "    consent: {w.add: {policy: ask, grant: 2w}}\n",
            "agents.a.consent.w.add.grant: '2w' is not a duration",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    tools: [wether__*]\n",
            "agents.a.tools: 'wether__\\*' names no tool of this agent's servers",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    allowance: {daily: lots}\n",
            "agents.a.allowance.daily: 'lots' is not an amount",
        ),
        (
            "agents:\n  a:\n    name: A\n    persona: agents/a\n    allowance: {weekly: 2}\n",
            "agents.a.allowance.weekly: unknown key",
        ),
    ],
)
def test_fleet_mistakes_name_the_file_key_and_fix(tmp_path: Path, body: str, message: str) -> None:
    persona(tmp_path)
    registry = load_registry(
        write(tmp_path, "r.yaml", "servers:\n  w:\n    url: http://x/mcp\n"), environ={}
    )
    with pytest.raises(ConfigError, match=message):
        load_fleet(write(tmp_path, "agents.yaml", body), registry, environ={})


def test_a_server_behind_the_gateway_that_is_no_program_stops_the_start_in_one_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "r.yaml", "servers:\n  w:\n    command: [/nonexistent/server]\n")
    env = {**os.environ, "CLAWMESH_REGISTRY": str(path), "OPENAI_API_KEY": "sk-test"}
    result = orchestrator(env, "chat")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "servers.w:" in line
    assert "'/nonexistent/server' is no program here" in line


def test_a_config_error_exits_2_with_one_message(tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", "servers:\n  w:\n    urll: http://x/mcp\n")
    env = {**os.environ, "CLAWMESH_REGISTRY": str(path), "OPENAI_API_KEY": "sk-test"}
    result = orchestrator(env, "chat")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"configuration error: {path}: servers.w.urll: unknown key; the keys are url, package, "
        "args, egress, memory, data, port, debian, command, module, description, auth, token, "
        "headers, env, timeout_s, role, proposes"
    ]


def test_without_an_llm_chat_says_how_to_configure_one() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    result = orchestrator(env, "chat")
    assert result.returncode == 2
    assert "export OPENAI_API_KEY=" in result.stderr
    assert "OPENAI_BASE_URL=http://localhost:11434/v1" in result.stderr


def test_an_in_process_server_that_cannot_be_imported_is_a_config_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.yaml",
        "servers:\n  weather:\n    module: no_such_package.server:build\n"
        "  memory:\n    module: mcp_memory.server:build_server\n"
        "  shopping:\n    module: mcp_shopping.server:build_server\n",
    )
    env = {**os.environ, "CLAWMESH_REGISTRY": str(path), "OPENAI_API_KEY": "sk-test"}
    result = orchestrator(env, "chat")
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"configuration error: {path}: servers.weather.module: "
        "'no_such_package.server:build' cannot be loaded"
    )


def test_telegram_refuses_to_start_an_agent_nobody_may_talk_to(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_USER_ID"}
    result = orchestrator({**env, "OPENAI_API_KEY": "sk-test"})
    assert result.returncode == 2
    assert "agents.clawdia.allowed_user_ids: empty" in result.stderr
    assert "TELEGRAM_USER_ID" in result.stderr


def test_make_run_without_a_bot_token_says_where_to_get_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("BOT_TOKEN", "TELEGRAM_USER_ID"))}
    env |= {
        "OPENAI_API_KEY": "sk-test",
        "TELEGRAM_USER_ID": "42",
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
        "DATA_DIR": str(tmp_path),
    }
    result = orchestrator(env)
    assert result.returncode == 2
    assert "no agent has a bot token" in result.stderr
    assert "@BotFather" in result.stderr


def test_two_servers_with_one_role_are_a_config_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "r.yaml",
        "servers:\n  memory: {url: 'http://m:1/mcp', role: memory}\n"
        "  notes: {url: 'http://n:1/mcp', role: memory}\n",
    )
    with pytest.raises(ConfigError) as error:
        load_registry(path, environ={})
    assert str(error.value) == (
        f"{path}: servers.notes.role: 'memory' is the memory server already; "
        "give the role to one server only"
    )


def test_persona_paths_start_at_the_project_root_wherever_the_fleet_file_is(
    tmp_path: Path,
) -> None:
    persona(tmp_path)
    registry = load_registry(write(tmp_path, "r.yaml", "servers:\n  w: {url: 'http://w:1'}\n"))
    elsewhere = tmp_path / "somewhere" / "else" / "fleet.yaml"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text("agents:\n  a: {name: A, persona: agents/a}\n")
    fleet = load_fleet(elsewhere, registry, environ={}, root=tmp_path)
    assert fleet["a"].persona.identity == "I am A."
    assert fleet["a"].servers == ("w",)  # no servers listed: every server of the registry


def test_an_agents_consent_rules_are_read_with_the_fleet(tmp_path: Path) -> None:
    persona(tmp_path)
    registry = load_registry(write(tmp_path, "r.yaml", "servers:\n  w: {url: 'http://w:1'}\n"))
    body = (
        "agents:\n  a:\n    name: A\n    persona: agents/a\n    consent:\n"
        "      w.add: auto\n      w.*: {policy: ask, grant: 30m}\n      '*': deny\n"
        "  b: {name: B, persona: agents/a}\n"
    )
    fleet = load_fleet(write(tmp_path, "agents.yaml", body), registry, environ={}, root=tmp_path)
    a, b = fleet["a"].policies, fleet["b"].policies
    assert a.rule("w", "add").policy == "auto"
    assert (a.rule("w", "remove").policy, a.rule("w", "remove").grant_s) == ("ask", 1800)
    assert a.rule("x", "add").policy == "deny"
    assert b.rule("w", "add").policy == "ask"  # no rules: everything asks


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ("auto", "agents.a.consent.mind.allow_more: auto would never apply"),
        ("{policy: ask, grant: 1h}", "agents.a.consent.mind.allow_more: grant would never apply"),
    ],
    ids=["auto", "grant"],
)
def test_a_rule_allowing_more_without_a_tap_is_a_mistake_named_with_its_key(
    tmp_path: Path, rule: str, named: str
) -> None:
    persona(tmp_path)
    registry = load_registry(
        write(tmp_path, "r.yaml", "servers:\n  mind: {url: 'http://m:1', role: memory}\n")
    )
    body = "agents:\n  a:\n    name: A\n    persona: agents/a\n    consent:\n"
    fleet = write(tmp_path, "agents.yaml", f"{body}      mind.allow_more: {rule}\n")

    with pytest.raises(ConfigError) as refused:
        load_fleet(fleet, registry, environ={}, root=tmp_path)

    assert str(refused.value).startswith(f"{fleet}: {named}: mind.allow_more always needs")
    assert str(refused.value).endswith("use ask or deny, or remove the rule")


def test_a_tap_only_kind_may_be_asked_or_denied_and_a_wildcard_leaves_it_asked(
    tmp_path: Path,
) -> None:
    persona(tmp_path)
    registry = load_registry(
        write(tmp_path, "r.yaml", "servers:\n  mind: {url: 'http://m:1', role: memory}\n")
    )
    body = (
        "agents:\n  a:\n    name: A\n    persona: agents/a\n    consent:\n"
        "      mind.*: auto\n      '*': {policy: ask, grant: 1h}\n"
        "  b:\n    name: B\n    persona: agents/a\n    consent: {mind.allow_more: deny}\n"
    )
    fleet = load_fleet(write(tmp_path, "agents.yaml", body), registry, environ={}, root=tmp_path)

    assert fleet["a"].policies.rule("mind", "remember").policy == "auto"
    assert fleet["b"].policies.rule("mind", "allow_more").policy == "deny"


def test_every_mistake_is_named_in_one_run(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TELEGRAM_", "CLAWDIA_"))
    }
    env |= {
        "OPENAI_API": "completions",  # not a known API
        "TELEGRAM_USER_ID": "@me",  # not a number
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
        "DATA_DIR": str(tmp_path),
    }
    result = orchestrator(env)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("configuration error: OPENAI_API is invalid: ")  # named as set
    del env["OPENAI_API"]
    result = orchestrator(env)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("configuration")]
    assert errors[0] == "configuration error: No LLM is configured. Either"
    assert "agents.clawdia.allowed_user_ids: '@me' is not a Telegram user id" in errors[1]
    assert "no agent has a bot token" in errors[2]
    assert len(errors) == 3
    assert "Traceback" not in result.stderr


def test_dot_env_is_read_as_dotenv_reads_it(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "# copied from .env.example and filled in\n"
        "OPENAI_API_KEY=sk-from-dotenv    # my key\n"
        "OPENAI_MODEL = gpt-dotenv   \n"
        "MESH_TOKEN=\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MESH_"))}
    env |= {
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
        "DATA_DIR": str(tmp_path / "data"),
    }
    shipped(tmp_path)  # a project folder: the shipped config/ and agents/ beside this .env
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "chat"],
        env=env,
        cwd=tmp_path,  # where the .env is
        input="/status\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "model gpt-dotenv ·" in result.stdout  # no comment, no spaces in the value
    assert "sk-from-dotenv" not in result.stdout + result.stderr


@pytest.mark.parametrize("user", ["-42", "0", "4 2", "٤٢"])
def test_a_user_id_that_is_not_a_positive_number_stops_telegram(user: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TELEGRAM_"))}
    result = orchestrator({**env, "OPENAI_API_KEY": "sk-test", "TELEGRAM_USER_ID": user})
    assert result.returncode == 2
    assert (
        f"agents.clawdia.allowed_user_ids: {user!r} is not a Telegram user id, which is a "
        "positive number" in result.stderr
    )


@pytest.mark.parametrize(
    ("llm", "named"),
    [
        ({"OPENAI_API_KEY": "TELEGRAM_BOT_TOKEN=1:x"}, "OPENAI_API_KEY does not look like"),
        ({"OPENAI_API_KEY": "sk-abc def"}, "OPENAI_API_KEY does not look like"),
        ({"OPENAI_BASE_URL": "localhost:11434/v1"}, "OPENAI_BASE_URL='localhost:11434/v1' is not"),
    ],
    ids=["not-sk", "two-words", "url-without-scheme"],
)
def test_an_llm_value_of_the_wrong_shape_is_named_with_its_fix(
    llm: dict[str, str], named: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TELEGRAM_"))}
    result = orchestrator({**env, **llm, "TELEGRAM_USER_ID": "42"})
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("configuration")]
    assert [line for line in errors if named in line], result.stderr


def test_a_key_for_another_server_is_not_held_to_openais_shape() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TELEGRAM_"))}
    env |= {"OPENAI_API_KEY": "ollama", "OPENAI_BASE_URL": "http://localhost:11434/v1"}
    result = orchestrator({**env, "TELEGRAM_USER_ID": "-42"})  # fails on the user id alone
    assert result.returncode == 2
    assert "OPENAI" not in result.stderr
    assert "'-42' is not a Telegram user id" in result.stderr


@pytest.mark.parametrize(
    ("ports", "message"),
    [
        ((8121, 8121), "servers.b.port: a publishes 8121 already; give each capability a port"),
        ((8104, None), "port 8104 is one of clawmesh's own servers' (8100-8110"),
        ((80, None), "servers.a.port: Input should be greater than or equal to 1024"),
    ],
)
def test_a_capabilitys_port_is_its_own_and_never_one_of_the_meshs(
    tmp_path: Path, ports: tuple[int, int | None], message: str
) -> None:
    registry = write(tmp_path, "mcp_servers.yaml", "servers:\n  w: {url: 'http://w:1/mcp'}\n")
    entries = "".join(
        f"  {name}:\n    package: {name}==1\n" + (f"    port: {port}\n" if port else "")
        for name, port in zip("ab", ports, strict=True)
    )
    write(tmp_path, "capabilities.yaml", "servers:\n" + entries)
    with pytest.raises(ConfigError) as caught:
        load_registry(registry, environ={})
    assert str(caught.value).startswith(str(registry.parent / "capabilities.yaml"))
    assert message in str(caught.value)
