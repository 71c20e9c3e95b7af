"""Calendar errors, each written for the model (or, at confirm, for the user).

CalendarError (meshkit ModelError)
 ├── InvalidRequest     a malformed argument or payload, a range too long, a bad rule
 ├── InvalidTime        a time that cannot be read, or that the clocks skip (DST)
 ├── NotFound           no event matches: the message lists the closest titles
 ├── Ambiguous          several events match: the message lists them so the model can ask
 ├── NotWritable        the calendar is read-only (an imported subscription, holidays)
 └── Stale              at confirm: the event changed or disappeared since it was proposed;
                        nothing was changed, propose again
ApprovalRefused (meshkit) a confirm tool without a valid approval token for exactly this change
"""

from __future__ import annotations

from meshkit.errors import ModelError


class CalendarError(ModelError):
    pass


class InvalidRequest(CalendarError):
    pass


class InvalidTime(CalendarError):
    pass


class NotFound(CalendarError):
    pass


class Ambiguous(CalendarError):
    pass


class NotWritable(CalendarError):
    pass


class Stale(CalendarError):
    pass
