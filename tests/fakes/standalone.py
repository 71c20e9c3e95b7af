"""The fakes as servers of their own, for the container tests (tests/containers/).

    python -m fakes.standalone telegram --port 8443 --token 123:abc
    python -m fakes.standalone llm --port 8080
    python -m fakes.standalone open-meteo --port 8090

Each binds 0.0.0.0 and adds ``GET /_control/health``. The LLM answers the way a model
with the mesh's tools would (``converse``): a weather question gets a forecast call, then a
reply that quotes the tool's answer; so does "what's on tomorrow?" with the calendar's
``get_events`` for tomorrow; "reorder ..." gets a ``shopping__propose_reorder`` call;
anything else a short text. ``POST /_control/script`` queues exact steps first
(``{"steps": [{"text": ...} | {"calls": [{"name", "arguments"}]} | {"slow": s, "step": ...}]}``)
and ``GET /_control/requests`` counts the requests seen.
"""

from __future__ import annotations

import argparse
from datetime import date, timedelta
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import Call, FakeOpenAI, Reply, Slow, Step, call, calls, text
from fakes.telegram_api import FakeTelegram

Body = dict[str, Any]


def _said(item: Body) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _tool(body: Body, suffix: str) -> str | None:
    for tool in body.get("tools", []):
        name = tool.get("name") or tool.get("function", {}).get("name")
        if isinstance(name, str) and name.endswith(suffix):
            return name
    return None


def converse(body: Body) -> Reply:
    """What a model with the mesh's tools answers to this request (Responses or Chat)."""
    items: list[Body] = body.get("input") or body.get("messages") or []
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output" or last.get("role") == "tool":
        found = str(last.get("output") or last.get("content") or "")
        return text(f"Here is what the tool said: {found[:1500]}")
    said = _said(last).lower()
    forecast = _tool(body, "get_forecast")
    if "weather" in said and forecast:
        return calls(call(forecast, location="Paris, France", days=1))
    events = _tool(body, "get_events")
    if "tomorrow" in said and events:
        return calls(call(events, start=(date.today() + timedelta(days=1)).isoformat()))
    reorder = _tool(body, "propose_reorder")
    if "reorder" in said and reorder:
        return calls(call(reorder, item=said.split("reorder", 1)[1].strip() or "oat milk"))
    return text("Hello from the fake model.")


def _step(spec: Body) -> Step:
    if "slow" in spec:
        return Slow(float(spec["slow"]), _step(spec["step"]))
    if "calls" in spec:
        made = [Call(c["name"], c.get("arguments", {})) for c in spec["calls"]]
        return calls(*made, preamble=str(spec.get("preamble", "")))
    return text(str(spec.get("text", "")))


def llm_app() -> ASGIApp:
    fake = FakeOpenAI()
    fake.default = converse

    async def script(request: Request) -> Response:
        fake.script(*(_step(spec) for spec in (await request.json())["steps"]))
        return JSONResponse({"queued": len(fake.queue)})

    async def requests(request: Request) -> Response:
        return JSONResponse({"count": len(fake.requests)})

    fake.app.router.routes += [
        Route("/_control/script", script, methods=["POST"]),
        Route("/_control/requests", requests),
    ]
    return fake.app


async def _healthy(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m fakes.standalone", description=__doc__)
    parser.add_argument("fake", choices=["telegram", "llm", "open-meteo"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", action="append", default=[], help="telegram: a bot")
    args = parser.parse_args()
    app: Any
    if args.fake == "telegram":
        telegram = FakeTelegram()
        for token in args.token:
            telegram.add_bot(token)
        app = telegram.app
    elif args.fake == "llm":
        app = llm_app()
    else:
        app = FakeOpenMeteo().app
    app.router.routes.insert(0, Route("/_control/health", _healthy))
    uvicorn.run(app, host="0.0.0.0", port=args.port, access_log=False)


if __name__ == "__main__":
    main()
