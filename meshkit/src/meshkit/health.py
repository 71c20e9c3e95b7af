"""``GET /health``: unauthenticated liveness and readiness for container healthchecks.

A check is an async callable that returns normally when healthy and raises when
not; a ``CheckFailed`` has its message shown, any other error only its type. The
answer is ``200 {"status": "ok", ...}`` or ``503`` naming each failing check. A check
that hangs counts as failing after ``CHECK_TIMEOUT_S``. A healthy check may return a line
worth an operator's look (say, records it had to skip): the answer lists it under
``details``, by the check's name, and stays ``ok``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse

logger = logging.getLogger(__name__)

Check = Callable[[], Awaitable[str | None]]
CHECK_TIMEOUT_S = 2.0


class CheckFailed(Exception):
    """A failing check whose message is shown in the answer (write it without secrets)."""


async def run_checks(
    checks: Mapping[str, Check], details: dict[str, str] | None = None
) -> dict[str, str]:
    """Each check's result; the lines healthy checks return go into ``details``."""
    results: dict[str, str] = {}
    for name, check in checks.items():
        try:
            with anyio.fail_after(CHECK_TIMEOUT_S):
                detail = await check()
        except TimeoutError:
            results[name] = f"fail: no answer within {CHECK_TIMEOUT_S:g}s"
        except CheckFailed as error:
            results[name] = f"fail: {error}"
        except Exception as error:  # a check may fail in any way; report, never crash
            logger.warning("health check %s failed: %s", name, error)
            results[name] = f"fail: {type(error).__name__}"
        else:
            results[name] = "ok"
            if detail and details is not None:
                details[name] = detail
    return results


def health_endpoint(
    server: str, version: str, checks: Mapping[str, Check]
) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def health(request: Request) -> JSONResponse:
        details: dict[str, str] = {}
        results = await run_checks(checks, details)
        failing = [name for name, result in results.items() if result != "ok"]
        body: dict[str, object] = {
            "status": "fail" if failing else "ok",
            "server": server,
            "version": version,
            "checks": results,
        }
        if failing:
            body["failing"] = failing
        if details:
            body["details"] = details
        return JSONResponse(body, status_code=503 if failing else 200)

    return health
