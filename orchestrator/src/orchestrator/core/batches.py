"""How a batch of proposed actions reads: a line per action, its outcome, its buttons.

Each line names the server that makes the change, first, from its registry name (which the
server cannot choose): "• Weather proposes: Add 1 × umbrella to groceries", then "✅ Weather:
Add 1 × umbrella to groceries — recorded". What the server wrote (the summary, the result's
message) comes after the name, on the same line, and bounded: it cannot pose as another
server's line.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from meshkit.consent_policy import duration_text
from meshkit.text import readable, shown_line
from meshkit.wire.pending_actions import ActionView
from orchestrator.core.callbacks import Tap, Verb, encode
from orchestrator.core.replies import Button, Reply

# Above this the reply went out in parts, the buttons on the last: a redraw (an edit of that
# part, after a tap) shows the list only, since the text stands in the parts before it.
FULL_TEXT_LIMIT = 3500
MESSAGE_LIMIT = 300  # of a result's message or an error, on its line (a server writes them)
MARKS = {
    "pending": "•",
    "executing": "⏳",
    "done": "✅",
    "cancelled": "❌",
    "expired": "⌛",
    "failed": "⚠️",
    "denied": "⛔",
}
OPEN = frozenset({"pending", "executing"})


@dataclass(frozen=True)
class Line:
    """One action as its message shows it."""

    action_id: str
    server: str  # the registry name of the server that makes the change
    summary: str
    confirm_label: str
    cancel_label: str
    state: str
    result: dict[str, Any] | None = None
    error: str | None = None
    grant_s: int | None = None  # pending: a tap may also allow its kind for this long
    allowed: str = ""  # done without a tap: why ("your policy allows it", "allowed until …")
    detail: str = ""  # the whole change (Proposal.detail), folded under the line while it waits

    @classmethod
    def of(cls, view: ActionView) -> Line:
        return cls(**view.model_dump(mode="json", include=_VIEWED))


_VIEWED = {f.name for f in fields(Line)} - {"allowed", "detail"}  # what an ActionView tells


def render(text: str, batch_id: str, lines: list[Line], *, redraw: bool = False) -> Reply:
    """The message for a batch: the text, a line per action, buttons for the open ones.

    The first time it is sent whole, however long (telegram-io sends it in parts); a
    ``redraw`` of a long one edits its last part, and shows the list only."""
    many = len(lines) > 1
    listing = "\n".join(
        f"{MARKS.get(line.state, '•')} {f'{number}. ' if many else ''}"
        + labelled(line.server, line.summary, proposing=line.state in OPEN)
        + _outcome(line)
        + (folded(line.detail) if line.detail and line.state in OPEN else "")
        for number, line in enumerate(lines, start=1)
    )
    return Reply(_body(text, listing, redraw=redraw), _buttons(lines, batch_id), batch_id)


def labelled(server: str, summary: str, *, proposing: bool = False) -> str:
    """A change as its line reads, its server named first: "Weather proposes: Add 1 ×
    umbrella to groceries" while it waits (``proposing``), else "Weather: Add 1 × …"."""
    verb = " proposes" if proposing else ""
    return f"{server_label(server)}{verb}: {shown_line(summary)}"


def folded(detail: str) -> str:
    """``detail`` as a quote under its line, every character as written (Markdown escaped:
    telegram-io converts the reply), which Telegram folds into one tap when it is long."""
    quoted = "\n".join(f">{_escaped(line)}" for line in detail.splitlines())
    return f"\n{quoted}"


def _escaped(text: str) -> str:
    """``text`` with every ASCII punctuation character backslash-escaped (CommonMark reads
    each as itself) and leading spaces kept as no-break spaces (a quote would drop them)."""
    stripped = text.lstrip(" ")
    body = "".join(f"\\{c}" if c.isascii() and not c.isalnum() and not c.isspace() else c
                   for c in stripped)  # fmt: skip
    return "\u00a0" * (len(text) - len(stripped)) + body


def server_label(server: str) -> str:
    """The server's registry name as the user reads it: ``weather`` → "Weather"."""
    return readable(server) or "A server"


def _body(text: str, listing: str, *, redraw: bool) -> str:
    whole = not redraw or len(text) + len(listing) < FULL_TEXT_LIMIT
    return f"{text}\n\n{listing}" if text and whole else listing


def _buttons(lines: list[Line], batch_id: str) -> list[list[Button]]:
    """A row per open action (and one more to allow its kind for a while, when its rule
    lets a tap do that); Confirm all and Cancel all when more than one waits."""
    many = len(lines) > 1
    # An action left executing (its confirm tool did not answer) keeps its buttons: a
    # later tap resumes it, and its confirm tool settles it once.
    open_ = [(n, line) for n, line in enumerate(lines, start=1) if line.state in OPEN]
    rows: list[list[Button]] = []
    for number, line in open_:
        prefix = f"{number}. " if many else ""
        rows.append([
            Button(f"{prefix}{line.confirm_label}", _tap("action", "confirm", line.action_id)),
            Button(f"{prefix}{line.cancel_label}", _tap("action", "cancel", line.action_id)),
        ])  # fmt: skip
        if line.grant_s and line.state == "pending":
            allow = f"{prefix}✅ and allow for {duration_text(line.grant_s)}"
            rows.append([Button(allow, _tap("action", "grant", line.action_id))])
    pending = [line for _, line in open_ if line.state == "pending"]
    if len(pending) > 1:
        rows.append([
            Button(f"✅ Confirm all {len(pending)}", _tap("batch", "confirm", batch_id)),
            Button("❌ Cancel all", _tap("batch", "cancel", batch_id)),
        ])  # fmt: skip
    return rows


def _tap(scope: Literal["action", "batch"], verb: Verb, target: str) -> str:
    return encode(Tap(scope, verb, target))


def redrawn_text(text: str) -> str:
    """What pending-actions keeps of a batch's text to redraw from: a long one is never
    redrawn (it stands in the parts before the buttons'), so nothing of it."""
    return text if len(text) < FULL_TEXT_LIMIT else ""


def message_of(result: dict[str, Any] | None) -> str:
    """A result's message (the server's words), as one line of bounded length."""
    return _short(str((result or {}).get("message") or "done"))


def _short(text: str) -> str:
    line = shown_line(text)
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 1] + "…"


# What a line in a state without words of its own ends with.
_STATE_WORDS = {
    "cancelled": " — cancelled",
    "denied": " — not allowed by your policy; nothing was done",
    "expired": " — expired, nothing was done",
    "executing": " — not finished yet: tap Confirm again to retry",
}


def _outcome(line: Line) -> str:
    if line.state == "done" and line.allowed:
        return f": done ({line.allowed})"
    if line.state == "done":
        return f" — {message_of(line.result)}"
    if line.state == "failed":
        return f" — failed: {_short(line.error or 'unknown error')}"
    return _STATE_WORDS.get(line.state, "")
