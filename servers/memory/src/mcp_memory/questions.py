"""Clarify questions: what the model asked, the message it is in, and how it was answered.

    ask ─► open ─┬─ choose(n) ─────────────► answered (the choice)
                 ├─ choose(other) ─► typing ─► answer_text ─► answered (the text)
                 ├─ answer_text (open question, no choices) ─► answered
                 └─ past expires_at ─► expired (buttons answer "expired"; text is a message)

A question is bound, when it is asked, to the key its message is sent under
(``message_key``): a tap acts only when it carries that key (the channel hands a tap with
the key of the message it is on), so a button works in that message alone, before and
after any restart, with nothing recorded after the send. The tap that changes it notes
the message's id (``message_id``), where a typed answer is drawn later.

A chat has at most one question waiting: a new one ends the one before. Every change is
one conditional UPDATE, so a double tap answers once. A tap carries its id (``tap_id``, the
channel's id for that one tap): the same tap handed over again after a crash finds the
question answered by itself and is still its answer, so the turn it starts can be redone;
another tap on an answered question changes nothing. The first tap to find a question
expired marks it so (changed: its message is redrawn once); later taps change nothing.
State lives here, in SQLite, so an orchestrator restarted between question and answer
finds it as it was.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from mcp_memory.errors import InvalidRequest
from meshkit.sqlite import SQLiteStore
from meshkit.wire.memory import Question

MAX_CHOICES = 6
SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    question TEXT NOT NULL,
    choices TEXT NOT NULL,
    state TEXT NOT NULL,
    message_id TEXT,
    answer TEXT,
    asked_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    answered_at REAL,
    answered_by TEXT,
    message_key TEXT
);
CREATE INDEX IF NOT EXISTS questions_by_chat ON questions (agent, chat_id, state);
"""
MIGRATIONS = {
    2: "ALTER TABLE questions ADD COLUMN answered_by TEXT;",
    3: "ALTER TABLE questions ADD COLUMN message_key TEXT;",
}
_SELECT = (
    "SELECT id, agent, chat_id, question, choices, state, message_id, answer, expires_at"
    " FROM questions"
)


def _question(row: tuple[object, ...], now: float) -> Question:
    qid, agent, chat_id, question, choices, state, message_id, answer, expires_at = row
    assert isinstance(expires_at, float | int)
    assert isinstance(choices, str)
    if state in ("open", "typing") and expires_at <= now:
        state = "expired"
    return Question.model_validate(
        {
            "id": qid, "agent": agent, "chat_id": chat_id, "question": question,
            "choices": json.loads(choices), "state": state, "message_id": message_id,
            "answer": answer, "expires_at": expires_at,
        }
    )  # fmt: skip


class QuestionStore(SQLiteStore):
    """The questions, one SQLite file; ``clock`` (Unix seconds) decides expiry."""

    SCHEMA = SCHEMA
    SCHEMA_VERSION = 3
    MIGRATIONS = MIGRATIONS

    def __init__(
        self, path: Path, *, max_bytes: int | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(path, max_bytes=max_bytes, clock=clock)
        self._clock = clock

    async def ask(  # noqa: PLR0917 (the chat, the question, its life, its message)
        self,
        agent: str,
        chat_id: str,
        question: str,
        choices: list[str],
        ttl_s: float,
        message_key: str | None = None,
    ) -> Question:
        """A new question in the chat, bound to the key its message is sent under (None: its
        buttons act nowhere); one still waiting there is ended (expired)."""
        if len(choices) > MAX_CHOICES:
            raise InvalidRequest(f"At most {MAX_CHOICES} choices; got {len(choices)}.")
        now = self._clock()
        qid = f"q_{secrets.token_hex(6)}"

        row = (qid, agent, chat_id, question, json.dumps(choices), now, now + ttl_s, message_key)

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE questions SET expires_at = ? WHERE agent = ? AND chat_id = ?"
                " AND state IN ('open', 'typing') AND expires_at > ?",
                (now, agent, chat_id, now),
            )
            db.execute(
                "INSERT INTO questions (id, agent, chat_id, question, choices, state,"
                " asked_at, expires_at, message_key) VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?)",
                row,
            )

        await self.transact(write)
        found = await self.get(qid)
        assert found is not None
        return found

    async def get(self, question_id: str) -> Question | None:
        now = self._clock()

        def read(db: sqlite3.Connection) -> Question | None:
            row = db.execute(_SELECT + " WHERE id = ?", (question_id,)).fetchone()
            return None if row is None else _question(row, now)

        return await self._run(read)

    async def choose(  # noqa: PLR0917 (the question, where it is, the tap)
        self,
        question_id: str,
        agent: str,
        chat_id: str,
        message_key: str,
        message_id: str,
        choice: int | None,
        tap_id: str | None = None,
    ) -> tuple[bool, Question | None]:
        """A tap on message ``message_id``, sent under ``message_key``: a choice (its index)
        answers, None (Other) waits for text. Whether the tap changed the question (now, or
        before: the same ``tap_id`` again), and the question as it stands (None: not in
        this chat's message)."""
        now = self._clock()

        def write(db: sqlite3.Connection) -> tuple[bool, Question | None]:
            row = db.execute(
                _SELECT + " WHERE id = ? AND agent = ? AND chat_id = ? AND message_key = ?",
                (question_id, agent, chat_id, message_key),
            ).fetchone()
            if row is None:
                return False, None
            found = _question(row, now)
            if found.state == "expired":  # the first tap to find it so redraws it
                marked = db.execute(
                    "UPDATE questions SET state = 'expired' WHERE id = ?"
                    " AND state IN ('open', 'typing')",
                    (found.id,),
                ).rowcount
                return marked == 1, found
            if tap_id is not None and found.state in ("answered", "typing"):
                (by,) = db.execute(
                    "SELECT answered_by FROM questions WHERE id = ?", (found.id,)
                ).fetchone()
                return by == tap_id, found
            if found.state != "open" or (
                choice is not None and not 0 <= choice < len(found.choices)
            ):
                return False, found
            shown = {"message_id": message_id}
            if choice is None:
                db.execute(
                    "UPDATE questions SET state = 'typing', answered_by = ?, message_id = ?"
                    " WHERE id = ?",
                    (tap_id, message_id, found.id),
                )
                return True, found.model_copy(update={"state": "typing", **shown})
            answer = found.choices[choice]
            db.execute(
                "UPDATE questions SET state = 'answered', answer = ?, answered_at = ?,"
                " answered_by = ?, message_id = ? WHERE id = ?",
                (answer, now, tap_id, message_id, found.id),
            )
            changed = {"state": "answered", "answer": answer, **shown}
            return True, found.model_copy(update=changed)

        return await self.transact(write)

    async def answer_text(self, agent: str, chat_id: str, text: str) -> Question | None:
        """A text that answers the chat's waiting question (an open one, or one whose Other
        was tapped): the question, answered; None when nothing waits for text."""
        now = self._clock()

        def write(db: sqlite3.Connection) -> Question | None:
            row = db.execute(
                _SELECT + " WHERE agent = ? AND chat_id = ?"
                " AND expires_at > ? AND (state = 'typing' OR (state = 'open'"
                " AND choices = '[]')) ORDER BY asked_at DESC LIMIT 1",
                (agent, chat_id, now),
            ).fetchone()
            if row is None:
                return None
            db.execute(  # answered by the text, not by the Other tap before it
                "UPDATE questions SET state = 'answered', answer = ?, answered_at = ?,"
                " answered_by = NULL WHERE id = ?",
                (text, now, row[0]),
            )
            return _question(row, now).model_copy(update={"state": "answered", "answer": text})

        return await self.transact(write)
