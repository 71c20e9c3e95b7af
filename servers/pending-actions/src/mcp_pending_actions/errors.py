"""Pending-actions errors, each written for the orchestrator that calls us.

PendingActionsError (meshkit ModelError)
 ├── InvalidRequest    a blank id, a bad server name, an oversized payload or result,
 │                     a batch of another chat, or shown under another message key
 ├── UnknownAction     no action with that id (complete, fail, history)
 ├── UnknownBatch      no batch with that id (stage into it, get_batch)
 ├── UnknownGrant      no running grant with that id for this agent and user (end_grant)
 ├── WrongState        complete or fail on an action that is not executing
 ├── NotAllowed        the agent's consent policy denies this kind of change (never staged)
 ├── TooManyPending    a client's proposals waiting for its user are at the bound (never staged)
 └── Forbidden         a server staging or following another server's changes

approve and cancel never raise these for a refusal: a tap on a done, cancelled or
expired action, or from anywhere but the message that shows it, is an ordinary answer
(``Decision.ok`` is false), not an error.
"""

from __future__ import annotations

from meshkit.errors import ModelError


class PendingActionsError(ModelError):
    pass


class InvalidRequest(PendingActionsError):
    pass


class UnknownAction(PendingActionsError):
    pass


class UnknownBatch(PendingActionsError):
    pass


class WrongState(PendingActionsError):
    pass


class UnknownGrant(PendingActionsError):
    pass


class NotAllowed(PendingActionsError):
    pass


class TooManyPending(PendingActionsError):
    pass


class Forbidden(PendingActionsError):
    pass
