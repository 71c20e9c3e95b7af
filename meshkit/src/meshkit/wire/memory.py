"""What the memory tools return."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from meshkit.wire.proposals import Proposal
from meshkit.wire.usage import Recorded


class AppendResult(BaseModel):
    stored: int = Field(description="Items stored (messages, function calls and their outputs)")
    ignored: int = Field(description="Items of other types (reasoning...), not stored")
    at: float = Field(description="Server time the items were stamped with (Unix seconds)")
    duplicate: bool = Field(
        default=False, description="This turn_id was appended before: nothing was stored"
    )
    summary_due: bool = Field(
        default=False,
        description="Asked with summarize_every: at least that many items out of the window "
        "wait for a summary (evicted_items hands them out)",
    )
    usage: Recorded | None = Field(
        default=None, description="Given usage records: how many were stored (null: none given)"
    )


class Window(BaseModel):
    items: list[dict[str, Any]] = Field(
        description="Responses API input items, oldest first, exactly as appended"
    )
    token_estimate: int = Field(description="Conservative token estimate of the items")
    dropped: int = Field(description="Older items of this conversation left out of the window")
    last_activity: float | None = Field(
        description="When the newest item of this conversation was appended (Unix seconds), "
        "or null when it has none"
    )
    summary: str | None = Field(
        default=None,
        description="A summary of this conversation's items that left the window, if one "
        "was written",
    )


class ResetResult(BaseModel):
    at: float = Field(description="Server time of the reset (Unix seconds)")
    previous_items: int = Field(
        description="Items of the conversation that ended; they are kept, but no window shows them"
    )


# --- long-term memory (remembered by a confirmed proposal) ---------------------------------


class Memory(BaseModel):
    id: str = Field(description="The memory's id ('mem_' + 12 hex), for propose_forget")
    scope: Literal["user", "agent"] = Field(
        description="user: about this user; agent: how this agent behaves for everyone"
    )
    text: str
    created_at: float = Field(description="When it was remembered (Unix seconds)")
    yours: bool = Field(
        default=False,
        description="A note about this user, or a rule this user set: theirs to forget "
        "(another's rule: only its setter or the agent's owner may forget it)",
    )


class Memories(BaseModel):
    memories: list[Memory] = Field(
        description="What this agent remembers for this user: its agent rules, then the "
        "notes about the user, oldest first"
    )


class Remembered(BaseModel):
    message: str
    memory: Memory
    replayed: bool = Field(default=False, description="Done before: nothing was done now")


class ForgetTapped(BaseModel):
    """A tap on a /memory 🗑: what it may do, from where it was tapped."""

    state: Literal["proposed", "forgotten", "not_here", "not_yours"] = Field(
        description="proposed: a forget to confirm; forgotten: already forgotten; "
        "not_here: the message sent under this key never showed that button to this user; "
        "not_yours: "
        "another's rule, and the tapping user is not the agent's owner"
    )
    redraw: bool = Field(
        default=False,
        description="forgotten: the message still shows its button (redraw the list)",
    )
    proposal: Proposal | None = Field(default=None, description="With state proposed")


class Forgotten(BaseModel):
    message: str
    memory_id: str
    replayed: bool = Field(default=False, description="Done before: nothing was done now")


# --- clarify: a question the model asked, waiting for the user's answer -------------------


class Question(BaseModel):
    id: str = Field(description="'q_' + 12 hex")
    agent: str
    chat_id: str
    question: str
    choices: list[str] = Field(description="Empty for an open question")
    state: Literal["open", "typing", "answered", "expired"] = Field(
        description="open: waiting (buttons, or text for an open question); typing: the user "
        "tapped Other and the next text is the answer; answered; expired"
    )
    message_id: str | None = Field(
        description="The message a tap on the question came from (where a typed answer is "
        "drawn); null: not tapped yet"
    )
    answer: str | None = None
    expires_at: float


class QuestionLookup(BaseModel):
    question: Question | None = Field(description="None: no such question")
    changed: bool = Field(
        default=False,
        description="Whether this call changed it (for a tap with its tap_id: this tap did, "
        "now or when it was handed over before; an expired question: this tap was the first "
        "to find it so)",
    )


# --- recall: full-text search over the notes and the archived conversation -----------------


class RecallHit(BaseModel):
    source: Literal["note", "conversation"]
    when: str = Field(description="Local date and time it was said or remembered")
    who: Literal["user", "assistant"] | None = Field(
        description="Who said it (conversation); null for a note"
    )
    snippet: str = Field(description="The matching words in [brackets], with some context")


class Recalled(BaseModel):
    hits: list[RecallHit] = Field(description="Best matches first: notes, then conversation")


# --- summaries of what left the window -----------------------------------------------------


class Evicted(BaseModel):
    lines: list[str] = Field(description="'user: …' / 'assistant: …', oldest first")
    up_to_id: int | None = Field(description="The last item they reach; null: nothing to do")
    summary: str | None = Field(description="The summary so far, which a new one replaces")


class SummarySaved(BaseModel):
    saved: bool = Field(description="False: a summary reaching as far exists, or a reset came")
    usage: Recorded | None = Field(
        default=None, description="Given usage records: how many were stored (null: none given)"
    )


# --- a turn's context: everything a turn reads from memory, in one call ---------------------


class TurnContext(BaseModel):
    window: Window = Field(description="The chat's conversation window, with its summary")
    memories: list[Memory] = Field(
        description="What the agent remembers for this user, as list_memories gives it"
    )
    answered: Question | None = Field(
        default=None,
        description="The question the text answered (now answered: its message shows it "
        "with its answer); null when none waited for text, or no text was given",
    )
    summary_due: bool = Field(
        default=False,
        description="Asked with summarize_every: at least that many items out of the window "
        "wait for a summary",
    )


# --- messages held at the allowance's cap, answered once more is allowed ----------------


class HeldMessage(BaseModel):
    turn_id: str = Field(description="The turn it starts (its update id): stored once under it")
    text: str
    user_id: str | None = Field(description="Who wrote it (null: the chat's own user)")
    purpose: Literal["turn", "scheduled"] = Field(
        description="turn: the user's message; scheduled: a scheduled prompt"
    )
    at: float = Field(description="When it was held (Unix seconds)")


class Held(BaseModel):
    held: bool = Field(description="False: as many wait already as a chat may hold; not kept")
    waiting: int = Field(description="Messages of the chat waiting now, this one included")


class HeldMessages(BaseModel):
    messages: list[HeldMessage] = Field(
        description="Held and not answered yet (no turn stored under their turn id), oldest first"
    )
