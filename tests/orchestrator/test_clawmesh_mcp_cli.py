"""``clawmesh mcp``'s mistakes in the command's one form, before it serves anything: a client
file it cannot use stops it with one line naming the file and the fix (Claude Desktop shows
the line in its log). The endpoint itself: tests/e2e/test_clawmesh_mcp.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from fakes.serving import serving_in_thread
from orchestrator.cli.main import main

GOOD = "client: claude-desktop\ntoken_file: desk.token\nservers:\n  weather: {url}\n"


def error_of(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as ended:
        main(["mcp", *argv])
    assert ended.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""  # stdout is the protocol's, even for a mistake
    assert err.startswith("Error: ")
    assert len(err.splitlines()) == 1
    return err


@pytest.fixture(autouse=True)
def _no_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout


def test_a_missing_client_file_says_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = error_of(tmp_path, capsys, str(tmp_path / "nope.yaml"))
    assert "no client file there" in err
    assert "make client NAME=... AGENT=... USER=..." in err


def test_a_missing_token_file_names_where_it_was_looked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "desk.yaml").write_text(GOOD.format(url="http://127.0.0.1:8101/mcp"))
    err = error_of(tmp_path, capsys, str(tmp_path / "desk.yaml"))
    assert f"token_file {tmp_path / 'desk.token'} cannot be read" in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param(
            GOOD.format(url="pi.local:8101"), "is not an http(s) URL", id="url-without-scheme"
        ),
        pytest.param(
            GOOD.replace("weather:", "Weather__x:").format(url="http://h:1/mcp"),
            "give its registry name",
            id="server-name-not-a-registry-name",
        ),
        pytest.param(
            GOOD.replace("claude-desktop", "Claude Desktop").format(url="http://h:1/mcp"),
            "client name",
            id="client-name-malformed",
        ),
        pytest.param(
            "client: claude-desktop\ntoken_file: desk.token\nservers: {}\n",
            "servers",
            id="no-server",
        ),
        pytest.param(
            "client: claude-desktop\ntoken: abc\nservers: {weather: 'http://h:1/mcp'}\n",
            "token",
            id="token-written-in-the-file",
        ),
    ],
)
def test_a_malformed_client_file_names_the_key_and_says_to_make_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    (tmp_path / "desk.yaml").write_text(text)
    (tmp_path / "desk.token").write_text("token\n")
    err = error_of(tmp_path, capsys, str(tmp_path / "desk.yaml"))
    assert said in err
    assert "make client" in err


def misdirected(_: Request) -> Response:
    """What a server's guard answers a Host outside MESH_ALLOWED_HOSTS (meshkit.http)."""
    return PlainTextResponse("misdirected request: Host not allowed (MESH_ALLOWED_HOSTS)", 421)


def test_a_host_name_the_servers_refuse_says_to_allow_it_on_the_pi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = Starlette(routes=[Route("/mcp", misdirected, methods=["POST"])])
    with serving_in_thread(app) as base:
        (tmp_path / "desk.yaml").write_text(GOOD.format(url=f"{base}/mcp"))
        (tmp_path / "desk.token").write_text("token\n")
        err = error_of(tmp_path, capsys, str(tmp_path / "desk.yaml"))
    assert "weather refused the host name of its URL in the client file (421)" in err
    assert "MESH_ALLOWED_HOSTS" in err
