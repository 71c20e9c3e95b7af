"""Scheduler errors, each written for the model.

SchedulerError (meshkit ModelError)
 ├── InvalidRequest    a time that cannot be read, one in the past
 └── NotFound          no such reminder (or not this agent's, or not active any more)
ApprovalRefused, NotThisPayload (meshkit) a confirm tool without a valid approval token for
                          exactly this change, or with a payload that is not a reminder change
"""

from __future__ import annotations

from meshkit.errors import ModelError


class SchedulerError(ModelError):
    pass


class InvalidRequest(SchedulerError):
    pass


class NotFound(SchedulerError):
    pass
