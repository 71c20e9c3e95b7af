"""What the pending-actions tools return (defined once, in meshkit.wire)."""

from __future__ import annotations

from meshkit.wire.pending_actions import (
    UNKNOWN,
    ActionList,
    ActionView,
    BatchDecisions,
    BatchView,
    Decision,
    Event,
    History,
    Staged,
    State,
)

__all__ = [
    "UNKNOWN",
    "ActionList",
    "ActionView",
    "BatchDecisions",
    "BatchView",
    "Decision",
    "Event",
    "History",
    "Staged",
    "State",
]
