"""Button callback data: the one place that writes and reads it (Telegram allows 64 bytes).

    pa:c:<action id>   confirm one action        pb:c:<batch id>   confirm all of a batch
    pa:x:<action id>   cancel one action         pb:x:<batch id>   cancel all of a batch
    pa:g:<action id>   confirm one action, and allow its kind for the grant its rule gives
    ge:<grant id>      end a running grant (/grants)
    cl:<question id>:<n | o>   a clarify answer  mf:<memory id>    forget a memory (/memory)
    rm:d | rm:s10 | rm:s60:<firing id>   a delivered reminder: done, snooze 10 min or 1 h

The part before the first ":" is the route (``prefix_of``): the dispatcher's table has
one handler for each of ``PREFIXES``. Anything else (an old button, forged data) decodes
to None, and a prefix of none of them has no handler. The data only names what
was tapped: whether it may happen is decided by the server that keeps its state, for the
tapping user, the bot and chat the tap came through, and the message the button is on
(the only one where those ids act): pending-actions (pa, pb, and the forget a 🗑 stages),
memory (cl, mf: which buttons a /memory message shows, whose a rule is) and the scheduler
(rm: the message a reminder was sent in). A grant's End (ge) only ever takes a permission
away: pending-actions ends it for the tapping user and agent, whoever's message it is on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MAX_BYTES = 64

ACTION = "pa"  # one pending action
BATCH = "pb"  # a whole batch of pending actions
CHOICE = "cl"  # a clarify answer
FORGET = "mf"  # /memory's Forget
REMINDER = "rm"  # a delivered reminder's follow-up
GRANT_END = "ge"  # /grants' End
PREFIXES = frozenset({ACTION, BATCH, CHOICE, FORGET, REMINDER, GRANT_END})


def prefix_of(data: str) -> str:
    """The route of callback ``data``: what comes before its first ":"."""
    return data.split(":", 1)[0]


def _checked(data: str, decode: Callable[[str], object], tapped: object) -> str:
    """``data``, once it is known to decode to what was tapped, within Telegram's bytes."""
    if decode(data) != tapped or len(data.encode()) > MAX_BYTES:
        raise ValueError(f"cannot encode {tapped!r}")
    return data


# A grant is given for one action's kind, never a batch's: no "g" for pb.
_TAP = re.compile(r"pa:([cxg]):(act_[0-9a-f]{12})|pb:([cx]):(bat_[0-9a-f]{12})")
Verb = Literal["confirm", "cancel", "grant"]  # grant: confirm, and allow for a while
_VERBS: dict[str, Verb] = {"c": "confirm", "x": "cancel", "g": "grant"}


@dataclass(frozen=True)
class Tap:
    scope: Literal["action", "batch"]
    verb: Verb
    target: str  # an action id or a batch id

    @property
    def confirms(self) -> bool:
        """Whether the tap says yes (Confirm, or Confirm and allow)."""
        return self.verb != "cancel"


def encode(tap: Tap) -> str:
    prefix = ACTION if tap.scope == "action" else BATCH
    verb = next(v for v, name in _VERBS.items() if name == tap.verb)
    return _checked(f"{prefix}:{verb}:{tap.target}", decode, tap)


def decode(data: str) -> Tap | None:
    found = _TAP.fullmatch(data)
    if found is None:
        return None
    if found[1]:
        return Tap("action", _VERBS[found[1]], found[2])
    return Tap("batch", _VERBS[found[3]], found[4])


# --- grants (/grants' End) ------------------------------------------------------------------
_GRANT = re.compile(r"ge:(grt_[0-9a-f]{12})")


def encode_grant_end(grant_id: str) -> str:
    return _checked(f"{GRANT_END}:{grant_id}", decode_grant_end, grant_id)


def decode_grant_end(data: str) -> str | None:
    """The grant id of an End button; None for anything else."""
    found = _GRANT.fullmatch(data)
    return None if found is None else found.group(1)


# --- reminders (the scheduler's firings) ---------------------------------------------------
#
#     rm:d:<firing id>     done            rm:s10:<firing id>   snooze 10 min
#                                          rm:s60:<firing id>   snooze 1 h
#
# The firing id names the reminder as it was delivered: the scheduler follows each firing
# up once, for the agent it belongs to.

_REMINDER = re.compile(r"rm:(d|s10|s60):(fir_[0-9a-f]{12})")
FollowUp = Literal["done", "snooze_10", "snooze_60"]
_FOLLOW_UPS: dict[str, FollowUp] = {"d": "done", "s10": "snooze_10", "s60": "snooze_60"}


@dataclass(frozen=True)
class ReminderTap:
    outcome: FollowUp
    firing_id: str


def encode_reminder(tap: ReminderTap) -> str:
    verb = next(v for v, outcome in _FOLLOW_UPS.items() if outcome == tap.outcome)
    return _checked(f"{REMINDER}:{verb}:{tap.firing_id}", decode_reminder, tap)


def decode_reminder(data: str) -> ReminderTap | None:
    found = _REMINDER.fullmatch(data)
    return None if found is None else ReminderTap(_FOLLOW_UPS[found[1]], found[2])


# Clarify answers and /memory's Forget buttons: decided by the memory server, not by
# pending-actions (a Forget tap stages and confirms a forget action of its own).
#
#     cl:<question id>:<n>   the n-th choice (0-5)     cl:<question id>:o   Other (type)
#     mf:<memory id>         forget this memory
_QUESTION = re.compile(r"cl:(q_[0-9a-f]{12}):([0-5]|o)")
_FORGET = re.compile(r"mf:(mem_[0-9a-f]{12})")


@dataclass(frozen=True)
class ChoiceTap:
    question_id: str
    choice: int | None  # None: Other (the answer is typed)


@dataclass(frozen=True)
class ForgetTap:
    memory_id: str


def encode_choice(tap: ChoiceTap) -> str:
    choice = "o" if tap.choice is None else tap.choice
    return _checked(f"{CHOICE}:{tap.question_id}:{choice}", decode_choice, tap)


def decode_choice(data: str) -> ChoiceTap | None:
    found = _QUESTION.fullmatch(data)
    if found is None:
        return None
    choice = found.group(2)
    return ChoiceTap(found.group(1), None if choice == "o" else int(choice))


def encode_forget(tap: ForgetTap) -> str:
    return _checked(f"{FORGET}:{tap.memory_id}", decode_forget, tap)


def decode_forget(data: str) -> ForgetTap | None:
    found = _FORGET.fullmatch(data)
    return None if found is None else ForgetTap(found.group(1))
