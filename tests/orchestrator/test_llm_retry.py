"""The retry policy, by cause: what is retried, how long it waits, what is raised."""

from __future__ import annotations

import datetime as dt

import pytest

from orchestrator.llm.errors import (
    LLMAuthFailed,
    LLMError,
    LLMQuotaExceeded,
    LLMRateLimited,
    LLMRejected,
    LLMUnavailable,
)
from orchestrator.llm.retry import CallFailed, RetryPolicy, retry_after_s

pytestmark = pytest.mark.anyio

NOW = dt.datetime(2026, 11, 22, 14, 0, tzinfo=dt.UTC).timestamp()


class Script:
    """A call that fails as scripted, then answers "ok"; sleeps are recorded."""

    def __init__(self, *failures: CallFailed) -> None:
        self.failures = list(failures)
        self.calls = 0
        self.sleeps: list[float] = []

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def policy(self, jitter: float = 0.0) -> RetryPolicy:
        return RetryPolicy(sleep=self.sleep, random=lambda: jitter, clock=lambda: NOW)


def status(code: int, error_code: str | None = None, **headers: str) -> CallFailed:
    return CallFailed(
        code, code=error_code, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


async def test_transient_failures_are_retried_with_growing_waits() -> None:
    script = Script(CallFailed(None), status(503))
    assert await script.policy().run(script) == "ok"
    assert script.sleeps == [1.0, 2.0]


async def test_jitter_shortens_a_wait_by_at_most_a_quarter() -> None:
    script = Script(CallFailed(None, timed_out=True), status(500))
    await script.policy(jitter=1.0).run(script)
    assert script.sleeps == [0.75, 1.5]


async def test_backoff_is_capped() -> None:
    script = Script(status(500), status(500), status(500), status(500))
    policy = RetryPolicy(
        attempts=5, backoff_s=4, max_backoff_s=6, sleep=script.sleep, random=lambda: 0.0
    )
    await policy.run(script)
    assert script.sleeps == [4.0, 6.0, 6.0, 6.0]


async def test_three_tries_then_the_model_is_unavailable() -> None:
    script = Script(status(500), status(502), status(529), status(500))
    with pytest.raises(LLMUnavailable) as caught:
        await script.policy().run(script)
    assert script.calls == 3
    assert isinstance(caught.value.__cause__, CallFailed)
    assert caught.value.__cause__.status == 529
    assert "HTTP 529" in str(caught.value)


@pytest.mark.parametrize(
    ("failure", "raised"),
    [
        (status(429, "insufficient_quota"), LLMQuotaExceeded),
        (status(401, "invalid_api_key"), LLMAuthFailed),
        (status(403), LLMAuthFailed),
        (status(400), LLMRejected),
        (status(404, "model_not_found"), LLMRejected),
        (status(422), LLMRejected),
        (status(413), LLMRejected),
        (status(429, "rate_limit_exceeded", retry_after="31"), LLMRateLimited),
        (status(503, retry_after="120"), LLMUnavailable),
    ],
)
async def test_failures_that_a_retry_cannot_fix_are_raised_at_once(
    failure: CallFailed, raised: type[LLMError]
) -> None:
    script = Script(failure)
    with pytest.raises(raised):
        await script.policy().run(script)
    assert script.calls == 1
    assert script.sleeps == []


async def test_a_rate_limit_waits_as_long_as_the_server_asks() -> None:
    script = Script(
        status(429, "rate_limit_exceeded", retry_after="1.5"),
        status(429, "rate_limit_exceeded", retry_after_ms="250"),
    )
    assert await script.policy().run(script) == "ok"
    assert script.sleeps == [1.5, 0.25]


async def test_a_rate_limit_without_retry_after_backs_off() -> None:
    script = Script(status(429, "rate_limit_exceeded"))
    await script.policy().run(script)
    assert script.sleeps == [1.0]


async def test_a_lasting_rate_limit_says_when_to_come_back() -> None:
    limited = status(429, "rate_limit_exceeded", retry_after="20")
    script = Script(limited, limited, limited)
    with pytest.raises(LLMRateLimited) as caught:
        await script.policy().run(script)
    assert script.calls == 3
    assert caught.value.retry_after_s == 20
    assert caught.value.user_message.endswith("try again in 20 seconds.")


async def test_a_long_retry_after_is_not_waited_for() -> None:
    script = Script(status(429, "rate_limit_exceeded", retry_after="120"))
    with pytest.raises(LLMRateLimited) as caught:
        await script.policy().run(script)
    assert caught.value.retry_after_s == 120
    assert script.sleeps == []


async def test_a_server_error_with_a_short_retry_after_waits_that_long() -> None:
    script = Script(status(503, retry_after="5"))
    await script.policy().run(script)
    assert script.sleeps == [5.0]


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Sun, 22 Nov 2026 14:01:30 GMT"}, 90.0),
        ({"retry-after": "Sun, 22 Nov 2026 13:59:00 GMT"}, 0.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "inf"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_in_seconds_milliseconds_or_as_a_date(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after_s(headers, NOW) == seconds


def test_a_failure_describes_itself_without_the_provider_text() -> None:
    assert str(CallFailed(429, code="insufficient_quota")) == "HTTP 429 insufficient_quota"
    assert str(CallFailed(500)) == "HTTP 500"
    assert str(CallFailed(None, timed_out=True)) == "timed out"
    assert str(CallFailed(None)) == "connection failed"
    assert CallFailed(429, headers={"Retry-After": "3"}).headers == {"retry-after": "3"}


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [(None, "in a minute"), (1, "in 1 second"), (1.2, "in 2 seconds"), (120, "in 120 seconds")],
)
def test_the_rate_limit_message_says_how_long_to_wait(retry_after: float | None, wait: str) -> None:
    error = LLMRateLimited("HTTP 429", retry_after_s=retry_after)
    assert (
        error.user_message == f"The language model is busy (rate limit). Please try again {wait}."
    )


def test_every_user_message_says_what_to_do() -> None:
    assert "minute" in LLMUnavailable("x").user_message
    assert "billing" in LLMQuotaExceeded("x").user_message
    assert "OPENAI_API_KEY" in LLMAuthFailed("x").user_message
    assert "OPENAI_MODEL" in LLMRejected("x").user_message
