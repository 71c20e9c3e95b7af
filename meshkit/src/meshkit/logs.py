"""Logging for every clawmesh process: configured once, to stderr, secrets redacted.

Redaction happens in the formatter, after the message and any traceback are
rendered, so no logger (ours, uvicorn's, httpx's, the MCP SDK's) can slip a
secret past it. Telegram bot tokens are redacted by shape as well, because the
Bot API puts them in every URL.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from meshkit.private import private_dir, private_file

REDACTED = "***"
_BOT_TOKEN = re.compile(r"(?<!\d)\d{5,}:[A-Za-z0-9_-]{30,}")
# Loggers that print full request URLs (Bot API URLs carry the token) or are chatty.
_QUIET = ("httpx", "httpx2", "httpcore", "httpcore2", "uvicorn.access", "mcp", "fastmcp", "docket")
# Loggers that write personal data below ERROR: caldav warns with a diff of the event text
# whenever it mends the iCalendar data a server sent.
_ERRORS_ONLY = ("caldav",)


class Redactor:
    """Replaces known secret values and anything shaped like a bot token."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return _BOT_TOKEN.sub(REDACTED, text)


class RedactingFormatter(logging.Formatter):
    def __init__(self, redactor: Redactor) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(super().format(record))


def configure_logging(
    level: str = "INFO", secrets: Iterable[str] = (), path: Path | None = None
) -> Redactor:
    """Send every log record to stderr (or appended to the file ``path``) through the
    redacting formatter."""
    redactor = Redactor(secrets)
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    if path is not None:
        private_dir(path.parent)
        private_file(path)  # 0600 before the handler appends to it
        handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(RedactingFormatter(redactor))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    for name in _ERRORS_ONLY:
        logging.getLogger(name).setLevel(max(logging.ERROR, root.level))
    # Libraries that install their own handlers would bypass redaction: route them to root.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "fastmcp", "mcp"):
        lib = logging.getLogger(name)
        lib.handlers.clear()
        lib.propagate = True
    return redactor
