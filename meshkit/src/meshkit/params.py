"""Tool parameters the orchestrator's internal tools share: who (agent), where (chat), and
integer ids; and the context arguments of the tools every client calls."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import Field

Agent = Annotated[
    str,
    Field(
        description="Agent id (one per Telegram bot), e.g. 'clawdia'",
        min_length=1,
        max_length=200,
    ),
]
ChatId = Annotated[
    str,
    Field(
        description="Chat id, as a string (Telegram chat ids are numbers)",
        min_length=1,
        max_length=200,
    ),
]

# Context arguments (meshkit.bindings): the orchestrator fills them in for its turn, a client
# bound to a person gets them from its binding.
ContextAgent = Annotated[
    str, Field(description="filled in by the assistant", min_length=1, max_length=200)
]
ContextUser = Annotated[str, Field(description="filled in by the assistant", max_length=200)]
ContextZone = Annotated[str, Field(description="filled in by the assistant", max_length=64)]

MAX_ID: Final = 2**63 - 1  # SQLite's INTEGER; Telegram's ids fit in it too
# An integer id (a row, a Telegram message): an id beyond MAX_ID is a validation error, not
# an OverflowError where SQLite gets it.
IntegerId = Annotated[int, Field(ge=1, le=MAX_ID)]
MessageKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1100,
        description="The idempotency key a message is sent under: its buttons act there only",
    ),
]
