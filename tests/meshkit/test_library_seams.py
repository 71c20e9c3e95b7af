"""Where clawmesh reaches past a library's public API, each pinned: these fail when the
library changes under it (docs/development.md, "Where the code reaches into a library").

The other places are pinned by the behaviour they give: uvicorn's ``HttpToolsProtocol``
subclass by tests/meshkit/test_http_limits.py, fastmcp's ``_mcp_server`` by
tests/meshkit/test_tool_schemas.py, ``ClientSession.validate_tool_result`` by
tests/orchestrator/test_registry.py (a result off its declared schema), uvicorn's
``Server.handle_exit`` by tests/weather/test_process.py (SIGTERM ends with exit 0).
"""

import inspect

import fastmcp.client.client
from mcp import ClientSession
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import Server

from mcp_calendar.dav import _CTag
from meshkit.connections import LimitedHttpProtocol
from orchestrator.mesh import reasons


def test_uvicorn_still_calls_every_httptools_hook_the_limited_protocol_overrides() -> None:
    overridden = {
        name
        for name, value in vars(LimitedHttpProtocol).items()
        if callable(value) and not name.startswith("_")
    }
    assert overridden <= set(dir(HttpToolsProtocol)), overridden - set(dir(HttpToolsProtocol))
    source = inspect.getsource(HttpToolsProtocol)
    for used in ("self.connections", "self.cycle", "self.transport", "self.loop"):
        assert used in source, used


def test_uvicorn_servers_still_start_and_exit_through_the_methods_serve_overrides() -> None:
    assert list(inspect.signature(Server.startup).parameters) == ["self", "sockets"]
    assert "signal.signal(sig, self.handle_exit)" in inspect.getsource(Server)


def test_the_mcp_client_still_checks_structured_results_in_validate_tool_result() -> None:
    assert "validate_tool_result" in inspect.getsource(ClientSession.call_tool)


def test_fastmcp_still_words_an_initialize_timeout_as_the_reasons_expect() -> None:
    assert f'"{reasons._INIT_TIMED_OUT}"' in inspect.getsource(fastmcp.client.client)


def test_a_caldav_element_subclass_still_names_the_ctag_property() -> None:
    assert _CTag().xmlelement().tag == "{http://calendarserver.org/ns/}getctag"
