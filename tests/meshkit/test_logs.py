"""Every log line goes to stderr with configured secrets and bot tokens redacted."""

from __future__ import annotations

import logging

import pytest

from meshkit.logs import REDACTED, configure_logging

SECRET = "mesh-token-very-secret"
BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


@pytest.fixture(autouse=True)
def restore_root_logger() -> object:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)


def test_configured_secrets_never_reach_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", secrets=[SECRET])
    logging.getLogger("anything").info("token is %s", SECRET)
    err = capsys.readouterr().err
    assert SECRET not in err
    assert f"token is {REDACTED}" in err


def test_bot_tokens_in_urls_are_redacted_from_any_logger(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO")
    logging.getLogger("uvicorn.error").warning(
        "GET https://api.telegram.org/bot%s/getUpdates failed", BOT_TOKEN
    )
    err = capsys.readouterr().err
    assert BOT_TOKEN not in err
    assert "/bot***/getUpdates" in err


def test_secrets_inside_tracebacks_are_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", secrets=[SECRET])
    try:
        raise RuntimeError(f"connect failed with {SECRET} and {BOT_TOKEN}")
    except RuntimeError:
        logging.getLogger("x").exception("boom")
    err = capsys.readouterr().err
    assert "RuntimeError" in err
    assert SECRET not in err
    assert BOT_TOKEN not in err


def test_logs_go_to_stderr_not_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    # stdout is the MCP stream in stdio mode: a log line there would corrupt it.
    configure_logging("DEBUG")
    logging.getLogger("meshkit").info("hello")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "hello" in captured.err


def test_chatty_http_loggers_are_quieted() -> None:
    configure_logging("DEBUG")
    assert logging.getLogger("httpx2").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING


def test_caldav_mending_an_event_writes_no_event_text_to_the_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # caldav warns with a diff of the event's text when it mends what a server sent.
    from caldav.lib import vcal

    configure_logging("DEBUG")
    broken = (
        "BEGIN:VCALENDAR\nVERSION:2.0\nBEGIN:VEVENT\nUID:a\nDTSTAMP:20260101T000000Z\n"
        "DTSTAMP:20260101T000000Z\nSUMMARY:Therapy with Dr Who\nDTSTART:20260101T100000Z\n"
        "END:VEVENT\nEND:VCALENDAR\n"
    )
    mended = vcal.fix(broken)  # type: ignore[no-untyped-call]
    assert mended.count("DTSTAMP") == 1  # it did mend (and would have logged the diff)
    assert "Therapy" not in capsys.readouterr().err
