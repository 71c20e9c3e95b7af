"""One turn: the model on what memory gave it, its tool calls (concurrently), within bounds.

A turn is bounded three ways: ``max_rounds`` model requests, ``max_tool_calls`` tool
calls, and ``timeout_s`` of wall time; and by the agent's allowance, checked before each
request (``Meter``): at the cap the turn ends (outcome ``allowance``) without the call,
and stores nothing; the calls it made are metered all the same. Every failure of a tool
becomes that call's output so the model can react. A failure of the model, or the time
running out, ends the turn with one fixed line for the user and stores nothing, so the
next attempt starts from the same history.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio

from meshkit.tool_classes import CONFIRM, PRODUCER
from meshkit.wire.memory import TurnContext
from meshkit.wire.proposals import Proposal
from meshkit.wire.usage import Purpose
from orchestrator.core import clarify
from orchestrator.core.allowance_replies import cap_text
from orchestrator.core.instructions import instructions
from orchestrator.core.remembered import earlier, layers
from orchestrator.core.routes import ToolObserver
from orchestrator.core.runtime import AgentRuntime
from orchestrator.core.screening import Screen
from orchestrator.core.usage import Capped, Meter, Who
from orchestrator.llm.base import FunctionCall, Image, Item, ToolSpec, Usage, Writing
from orchestrator.llm.errors import LLMError, LLMRejected
from orchestrator.mesh.bridge import (
    cannot_make_output,
    denied_output,
    error_output,
    note_for,
    output_of,
    output_of_error,
    prepare_arguments,
    proposal_output,
    to_tool_spec,
)
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry, ToolResult
from orchestrator.mesh.tools import ToolInfo

logger = logging.getLogger(__name__)

ROUND_LIMIT_REPLY = (
    "I stopped after {rounds} rounds of tool calls without a final answer. "
    "Could you narrow the request, or ask me to continue?"
)
TIMEOUT_REPLY = (
    "That took too long ({seconds:g} s), so I stopped without an answer. "
    "Try again, or ask for something smaller."
)
TOOL_LIMIT_OUTPUT = (
    "Not called: this turn has used its {limit} tool calls. Answer with what you have."
)
EMPTY_REPLY = "I have nothing to add to that."
NO_IMAGES = (
    "My model cannot look at pictures, so I could not see that photo. "
    "Tell me in words what it shows and I'll help."
)


@dataclass(frozen=True)
class TurnRequest:
    """What a turn answers: the agent, the chat, the text, the user who wrote it (their
    notes; the one who may confirm its proposals), and who watches its tool calls."""

    runtime: AgentRuntime
    chat_id: str
    text: str
    user_id: str | None = None
    observe: ToolObserver | None = None
    writing: Writing | None = None  # told the reply's text as the model writes it (streamed)
    images: tuple[Image, ...] = ()  # photos the user sent with the text (its caption)
    purpose: Purpose = "turn"  # or "scheduled": a scheduled prompt
    turn_id: str | None = None  # what its usage records are grouped by (an update id)

    @property
    def user(self) -> str:
        """Whose notes the turn remembers: the user's, else the chat's (a private chat)."""
        return self.user_id or self.chat_id

    @property
    def who(self) -> Who:
        """Whose allowance its model calls count to."""
        return Who(self.runtime.id, self.user, self.chat_id, self.purpose, self.turn_id)


@dataclass
class TurnResult:
    text: str
    outcome: str  # ok | round_limit | llm_error | timeout | allowance
    new_items: list[Item] = field(default_factory=list)
    proposals: list[tuple[str, Proposal]] = field(default_factory=list)  # (server, proposal)
    llm_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    asked: clarify.Asked | None = None  # the turn ended with this question (clarify)
    capped: Capped | None = None  # the allowance reached before a model call (outcome)

    @property
    def stored(self) -> bool:
        """Whether the turn goes into the conversation (a failed one leaves no trace)."""
        return self.outcome in ("ok", "round_limit")


@dataclass
class _Turn:
    """A turn under way: its request, the tools it may call (by model-facing name), the
    context arguments the orchestrator fills in for them, and its result so far."""

    request: TurnRequest
    tools: dict[str, ToolInfo]
    context: dict[str, str]
    result: TurnResult


class TurnEngine:
    def __init__(
        self,
        registry: Registry,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        meter: Meter | None = None,
    ) -> None:
        """``meter``: prices and counts each model call and checks the allowance before
        it (None: nothing metered)."""
        self._registry = registry
        self._now = now
        self.meter = meter
        self._screen = Screen(registry)
        self._specs: dict[str, tuple[ToolInfo, ToolSpec]] = {}
        self._blind: set[str] = set()  # agents whose model refused a picture

    def visible_tools(self, runtime: AgentRuntime) -> list[ToolInfo]:
        """The read and producer tools of the agent's own servers that it offers (its
        ``tools:``): all the model may call, and what /help and /status count."""
        agent = runtime.agent
        tools = self._registry.tools(agent.servers)
        return [tool for tool in tools if agent.offers(tool.qualified)]

    async def run(self, request: TurnRequest, memory: TurnContext | None = None) -> TurnResult:
        """One turn, on what memory gave it (``memory``: the window with its summary and
        the remembered lines; None: a turn without any). It stores nothing: the caller
        records ``new_items`` when the result is ``stored``."""
        started = time.perf_counter()
        runtime = request.runtime
        tools = {tool.qualified: tool for tool in self.visible_tools(runtime)}
        context = {
            "agent": runtime.id, "timezone": runtime.agent.entry.timezone,
            "user": request.user,
        }  # fmt: skip
        turn = _Turn(request, tools, context, TurnResult(text="", outcome="ok"))
        result = turn.result
        with anyio.move_on_after(runtime.limits.timeout_s) as deadline:
            await self._run(turn, memory)
        if deadline.cancelled_caught:
            logger.warning(
                "turn agent=%s chat=%s: no answer within %g s; stopped",
                runtime.id,
                request.chat_id,
                runtime.limits.timeout_s,
            )
            result.outcome = "timeout"
            result.text = TIMEOUT_REPLY.format(seconds=runtime.limits.timeout_s)
        logger.info(
            "turn agent=%s chat=%s outcome=%s duration_ms=%.0f llm_calls=%d tool_calls=%d "
            "tokens_in=%d tokens_out=%d",
            runtime.id,
            request.chat_id,
            result.outcome,
            (time.perf_counter() - started) * 1000,
            result.llm_calls,
            result.tool_calls,
            result.usage.input_tokens,
            result.usage.output_tokens,
        )
        return result

    async def _run(self, turn: _Turn, memory: TurnContext | None) -> None:
        request, result = turn.request, turn.result
        runtime = request.runtime
        specs = [*(self._spec(tool) for tool in turn.tools.values()), clarify.SPEC]
        if request.images and runtime.id in self._blind:
            result.outcome, result.text = "llm_error", NO_IMAGES
            return
        user: Item = {"type": "message", "role": "user", "content": request.text}
        if request.images:  # the model sees them in this turn; what is stored says so
            described = f"[photo] {request.text}".strip()
            result.new_items.append({"type": "message", "role": "user", "content": described})
            parts = [{"type": "input_text", "text": request.text}] if request.text else []
            user["content"] = [*parts, *(image.part() for image in request.images)]
        else:
            result.new_items.append(user)
        history = list(memory.window.items) if memory is not None else []
        items = [*history, user]
        remembered = layers(memory.memories).section() if memory is not None else ""
        summary = earlier(memory.window.summary if memory is not None else None)
        system = instructions(
            runtime.agent, self._now(), "\n\n".join(filter(None, [remembered, summary]))
        )
        limits = runtime.limits
        try:
            for _ in range(limits.max_rounds):
                if await self._capped(request, result):
                    return
                reply = await runtime.llm.respond(
                    instructions=system, items=items, tools=specs, writing=request.writing
                )
                result.llm_calls += 1
                result.usage += reply.usage
                if self.meter is not None:
                    self.meter.used(request.who, runtime.llm.model, reply.usage)
                items.extend(reply.items)
                result.new_items.extend(i for i in reply.items if i.get("type") != "reasoning")
                if not reply.calls:
                    result.text = reply.text.strip() or EMPTY_REPLY
                    return
                outputs = await self._execute_all(turn, reply.calls)
                items.extend(outputs)
                result.new_items.extend(outputs)
                if result.asked is not None:  # the turn ends with the question
                    result.text = result.asked.question
                    said = {"type": "message", "role": "assistant", "content": result.text}
                    result.new_items.append(said)
                    return
            result.outcome = "round_limit"
            result.text = ROUND_LIMIT_REPLY.format(rounds=limits.max_rounds)
            result.new_items.append(
                {"type": "message", "role": "assistant", "content": result.text}
            )
        except LLMError as error:
            if isinstance(error, LLMRejected) and request.images and not result.llm_calls:
                # Said in words, and from now on without asking the model again.
                logger.warning(
                    "turn agent=%s: the model refused a picture (%r); photos declined from now",
                    runtime.id, error.__cause__,
                )  # fmt: skip
                self._blind.add(runtime.id)
                result.outcome, result.text = "llm_error", NO_IMAGES
                return
            logger.warning(
                "turn agent=%s chat=%s: LLM failed: %s (%r)",
                runtime.id,
                request.chat_id,
                type(error).__name__,
                error.__cause__,
            )
            result.outcome = "llm_error"
            result.text = error.user_message

    async def _capped(self, request: TurnRequest, result: TurnResult) -> bool:
        """Whether the allowance forbids the next model call: then the turn ends here."""
        capped = None if self.meter is None else await self.meter.check(request.who)
        if capped is None:
            return False
        logger.info(
            "turn agent=%s chat=%s: %s reached after %d model calls; stopped",
            request.runtime.id, request.chat_id, capped.standing.limit.key, result.llm_calls,
        )  # fmt: skip
        result.outcome, result.capped = "allowance", capped
        result.text = cap_text(capped, midway=result.llm_calls > 0)
        return True

    async def _execute_all(self, turn: _Turn, calls: list[FunctionCall]) -> list[Item]:
        result, limits = turn.result, turn.request.runtime.limits
        observe = turn.request.observe
        outputs: list[Item] = [{} for _ in calls]
        allowed = max(0, limits.max_tool_calls - result.tool_calls)

        async def execute(index: int, call: FunctionCall) -> None:
            tool = turn.tools.get(call.name)
            if index >= allowed:
                output = error_output(TOOL_LIMIT_OUTPUT.format(limit=limits.max_tool_calls))
            elif call.name == clarify.NAME:
                output = _asked(call, result)
            else:
                if observe is not None:
                    await observe(tool, call)
                output = await self._execute(turn, call, tool)
            outputs[index] = {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": output,
            }

        result.tool_calls += min(len(calls), allowed)
        async with anyio.create_task_group() as group:
            for index, call in enumerate(calls):
                group.start_soon(execute, index, call)
        return outputs

    async def _execute(self, turn: _Turn, call: FunctionCall, tool: ToolInfo | None) -> str:
        if tool is None:
            # Includes confirm and internal tools: they are not the model's to call.
            return error_output(
                f"There is no tool named {call.name!r}. Use only the tools you were given."
            )
        try:
            arguments = prepare_arguments(call.arguments, tool.input_schema)
        except ValueError as error:
            return error_output(f"{call.name}: {error}")
        # Filled in here, over anything the model sent: it never acts as another agent or user.
        arguments.update({name: turn.context[name] for name in tool.context})
        try:
            answer = await self._registry.call(tool, arguments)
        except ToolCallError as error:
            logger.debug("tool %s gave no result: %s", call.name, error)
            return output_of_error(error, tool)
        proposal = _proposal(tool, answer)
        if proposal is not None:
            return await self._proposed(turn, tool, answer, proposal)
        logger.debug("tool %s ok %.1f ms", call.name, answer.duration_ms)
        return output_of(answer)

    async def _proposed(
        self, turn: _Turn, tool: ToolInfo, answer: ToolResult, proposal: Proposal
    ) -> str:
        """A producer's proposal: kept to be staged after the turn, unless its server cannot
        make it or the policy denies it; what the model reads says which."""
        request, agent = turn.request, turn.request.runtime.agent
        confirm = self._registry.find(tool.server, f"confirm_{proposal.kind}")
        if confirm is None or confirm.tool_class != CONFIRM:
            logger.warning(
                "turn agent=%s: %s proposed a change of kind %r, which %s has no confirm "
                "tool for: not staged", request.runtime.id, tool.qualified, proposal.kind[:40],
                tool.server,
            )  # fmt: skip
            return cannot_make_output(tool, proposal.kind)
        rule = agent.policies.rule(tool.server, proposal.kind)
        change = f"{tool.server}.{proposal.kind}"
        if rule.policy == "deny" and await self._screen.denied(
            request.runtime.id, request.user_id, tool.server, proposal
        ):
            logger.info("turn agent=%s: %s denied by policy", request.runtime.id, change)
            return denied_output(agent.entry.name, change)
        turn.result.proposals.append((tool.server, proposal))
        # What the model reads is what happens after its reply: a change the policy allows
        # is made at once, one a grant may allow perhaps; the server's own note says "wait".
        return proposal_output(answer, note_for(rule.policy, offers_grant=rule.grant_s is not None))

    def _spec(self, tool: ToolInfo) -> ToolSpec:
        cached = self._specs.get(tool.qualified)
        if cached is not None and cached[0] is tool:
            return cached[1]
        spec = to_tool_spec(tool)
        self._specs[tool.qualified] = (tool, spec)
        return spec


def _proposal(tool: ToolInfo, answer: ToolResult) -> Proposal | None:
    """The proposal a producer tool returned; None for any other result."""
    if tool.tool_class != PRODUCER or answer.structured is None:
        return None
    try:
        return Proposal.model_validate(answer.structured)
    except ValueError as error:
        logger.warning("%s returned no valid proposal: %s", tool.qualified, error)
        return None


def _asked(call: FunctionCall, result: TurnResult) -> str:
    """A clarify call: the question the turn ends with (the first, if it asked several)."""
    try:
        asked = clarify.parse(call)
    except ValueError as error:
        return error_output(str(error))
    if result.asked is None:
        result.asked = asked
        return clarify.ASKED_OUTPUT
    return error_output("Only one question at a time: this one was not asked.")


def arguments_preview(call: FunctionCall, limit: int = 80) -> str:
    """``location=Paris, days=2``: a short view of a call for progress lines."""
    try:
        parsed = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.arguments[:limit]
    if not isinstance(parsed, dict):
        return str(parsed)[:limit]
    text = ", ".join(f"{k}={v}" for k, v in parsed.items() if v is not None)
    return text if len(text) <= limit else text[: limit - 1] + "…"
