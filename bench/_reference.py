"""Reference HTTP servers for ``bench.hop``, under the uvicorn settings of ``meshkit.serve``.

python -m bench._reference floor PORT             bare Starlette: POST /mcp echoes its JSON body
python -m bench._reference fastmcp-default PORT   the echo server as ``server.http_app()`` serves it
"""

from __future__ import annotations

import json
import sys

import fastmcp
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from bench._echo_server import build_server


async def echo_json(request: Request) -> JSONResponse:
    return JSONResponse(json.loads(await request.body()))


def floor_app() -> ASGIApp:
    return Starlette(routes=[Route("/mcp", echo_json, methods=["POST"])])


def fastmcp_default_app() -> ASGIApp:
    return build_server().http_app()


def main(argv: list[str]) -> None:
    kind, port = argv
    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    app = floor_app() if kind == "floor" else fastmcp_default_app()
    # The same settings as meshkit.serve, so only the application differs.
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(port),
        log_config=None,
        lifespan="on",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
