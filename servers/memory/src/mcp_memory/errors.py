"""Memory errors, each written for the model (here: the orchestrator that calls us).

ConversationError (meshkit ModelError)
 ├── InvalidRequest    empty agent or chat id, a limit out of range
 └── InvalidItem       an item to append is malformed: which index, and what is wrong
"""

from __future__ import annotations

from meshkit.errors import ModelError


class ConversationError(ModelError):
    pass


class InvalidRequest(ConversationError):
    pass


class InvalidItem(ConversationError):
    pass
