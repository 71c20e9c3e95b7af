"""What a ``producer`` tool returns: a change for the user to confirm or cancel, and the notes
that tell the model it is not done yet (its approval and confirm-once: ``meshkit.proposals``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, StrictBool, StrictInt, field_validator

from meshkit.wire.pending_actions import ClientStaged

DEFAULT_TTL_S = 4 * 3600
MAX_TTL_S = 7 * 24 * 3600
KIND_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"

NOT_DONE_NOTE = (
    "Nothing has changed yet: the user sees this under your reply, with buttons to "
    "confirm or cancel it, and decides. Do not say it is done."
)
# What another MCP client's model reads (meshkit.consent): the decision is on Telegram.
# Said when it is staged, before the chat has it: queued, not sent (get_action says when).
QUEUED_NOTE = (
    "Nothing has changed yet: this is queued for the user's Telegram chat, where it will "
    "appear with buttons to confirm or cancel it; nothing changes until they tap Confirm. "
    "Do not say it is done, nor that the user has it yet. Follow it with "
    "get_action(action_id): it says when it reached their chat (shown_at), why not yet "
    "(not_shown), and how it ends."
)
ALLOWED_NOTE = (
    "The user's policy allows this change without a tap: it is being made now, and the user "
    "will be told on Telegram. Follow it with get_action(action_id) to see its outcome."
)


class Proposal(BaseModel):
    """What a ``producer`` tool returns: a change for the user to confirm or cancel."""

    kind: str = Field(
        pattern=KIND_PATTERN,
        max_length=40,
        description="The change's kind; the server performs it with its confirm_<kind> tool",
    )
    summary: str = Field(
        min_length=1, max_length=500, description="One line the user reads above the buttons"
    )
    payload: dict[str, Any] = Field(description="Everything confirm_<kind> needs, as JSON")
    confirm_label: str = Field(default="✅ Confirm", min_length=1, max_length=40)
    cancel_label: str = Field(default="❌ Cancel", min_length=1, max_length=40)
    ttl_s: StrictInt = Field(
        default=DEFAULT_TTL_S, ge=1, le=MAX_TTL_S, description="Seconds until it expires"
    )
    note: str = Field(default=NOT_DONE_NOTE, max_length=1000, description="For the model")
    tap_only: StrictBool = Field(
        default=False,
        # Written only when true: what every other proposal costs the model stays as it was.
        exclude_if=lambda value: value is False,
        description="Its kind always needs the user's tap (the server declares it): "
        "pending-actions asks whatever a policy (auto) or a grant says, and offers no grant",
    )
    detail: str | None = Field(
        default=None,
        max_length=4000,
        # Written only when there is one: what every other proposal costs stays as it was.
        exclude_if=lambda value: value is None,
        description="The whole change, for a person to read in full before deciding (a "
        "capability's call: its tool and every argument); shown folded under the summary",
    )
    staged: ClientStaged | None = Field(
        default=None,
        description="Proposed by a client bound to a person: the pending action it became "
        "(follow it with get_action(action_id)); null when the assistant proposes it",
    )

    @field_validator("summary", "confirm_label", "cancel_label")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()
