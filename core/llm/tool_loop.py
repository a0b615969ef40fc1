"""ToolLoop: the one tool-calling loop. A model calls read-only tools through the ToolBoundary until it calls a
submit function; the Diagnosis Agent and the Knowledge Answer are two configurations of it (LoopConfig).

One budget check, one corrective-turn policy, one wire-id policy, typed stop reasons, and no wasted steps:
a call identical to an earlier one of the run (same tool, same normalised arguments) is answered with the
earlier call's projection and a note, without a second backend query or budget.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate
from core.contracts.run import StopReason
from core.llm.model import ModelReply, ModelToolCall
from core.llm.model_step import LoopStopped, ModelStep, race
from core.llm.prompts import PromptLibrary
from core.llm.wire import assistant_message, decode_arguments, system_message, tool_message, user_message
from core.ports import ToolInvoker
from core.run import RunContext

log = logging.getLogger(__name__)

OutT = TypeVar("OutT", bound=BaseModel)
BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
ECHOED_CONTENT_CHARS = 2000
REPEAT_NOTE = ("Identical to an earlier call of this run, so it was not run again: this is that call's result; "
               "cite its tool_call_id. Change the arguments to learn something new.")


@dataclass(frozen=True)
class LoopConfig(Generic[OutT]):
    """What makes a loop the Diagnosis Agent or the Knowledge Answer."""

    stage: str
    prompt: str
    tools: list[dict[str, Any]]
    tool_names: frozenset[str]
    submit_name: str
    output: type[OutT]
    correction: str
    max_steps: int | None = None
    corrective_turns: int = 1
    normalise: Callable[[str, dict[str, Any]], dict[str, Any] | None] | None = None
    """Normalised arguments of a tool call (for repeat detection); None when they do not validate."""


@dataclass
class LoopResult(Generic[OutT]):
    """How a loop ended: the submitted output (if any) and why it stopped."""

    output: OutT | None
    stop_reason: StopReason
    steps: int = 0
    tool_calls: int = 0
    repeated_calls: int = 0


def validation_summary(exc: ValidationError, limit: int = 8) -> str:
    """A short, safe list of schema errors (location and message, never the input values)."""
    parts = [f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors(include_input=False)]
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def budget_stop_reason(ctx: RunContext) -> StopReason:
    """Which budget a BUDGET_EXHAUSTED answer of the boundary ran into."""
    if ctx.tool_calls >= ctx.budgets.max_tool_calls:
        return StopReason.BUDGET_TOOL_CALLS
    if ctx.seconds_left() <= 0:
        return StopReason.DEADLINE
    return StopReason.BUDGET_OBSERVATION


def ascii_json_size(text: str) -> int:
    """len(json.dumps(v, default=str).encode()) given text = json.dumps(v, ensure_ascii=False, default=str).

    The two encodings differ only in escaping: with ensure_ascii every character from U+007F up is written as
    \\uXXXX (6 bytes), or as a surrogate pair (12 bytes) above U+FFFF, where the other writes the character itself.
    """
    size = len(text) + 5 * text.count("\x7f")
    if not text.isascii():
        size += sum(5 if ord(c) < 0x10000 else 11 for c in text if ord(c) > 0x7F)
    return size


@dataclass
class _Step(Generic[OutT]):
    """What one model step produced."""

    output: OutT | None = None
    mistakes: list[str] = field(default_factory=list)
    budget_stop: StopReason | None = None


class _State:
    """Counters and memory of one run of a loop."""

    def __init__(self) -> None:
        self.steps = 0
        self.mistakes = 0
        self.tool_calls = 0
        self.repeated = 0
        self.observation_bytes = 0
        self.used_ids: set[str] = set()
        self.seen: dict[str, dict[str, Any]] = {}
        """Repeat key -> the projection of the call that ran with it."""
        self.once: dict[str, tuple[ModelToolCall, dict[str, Any] | None]] = {}
        """Tool name -> its only call so far, whose repeat key is not computed yet, and the projection a repeat of it
        reuses (None when it failed). The first call of a tool can never be a repeat, so its key (a validation, a
        dump and a JSON encoding) is only computed when a second call of the same tool comes."""
        self.keys: dict[tuple[str, str], str | None] = {}
        """(tool name, raw argument text) -> its repeat key: the same text always has the same key."""
        self.keyed: set[str] = set()
        """Tool names whose calls get repeat keys as they come (called more than once in this run)."""

    def wire_id(self, model_id: str | None) -> str:
        """The id to send back on the wire: the model's own when unused, else a fresh one."""
        chosen = model_id if model_id and model_id not in self.used_ids else f"call_{uuid.uuid4().hex[:16]}"
        self.used_ids.add(chosen)
        return chosen


class ToolLoop(Generic[OutT]):
    """Runs one configuration: model steps, tool calls through the boundary, until the submit function."""

    def __init__(self, step: ModelStep, boundary: ToolInvoker, prompts: PromptLibrary, config: LoopConfig[OutT]) -> None:
        self.step = step
        self.boundary = boundary
        self.prompts = prompts
        self.config = config

    async def run(self, ctx: RunContext, user_text: str, starting: list[dict[str, Any]] | None = None,
                  starting_results: Mapping[str, dict[str, Any]] | None = None) -> LoopResult[OutT]:
        """Loop until the output is submitted or a budget, the deadline, cancel, the model or the wire format stops it.

        `starting` is conversation the run already had before the model's first step (the first look's calls and
        their results): their ids are taken and repeating one of them is answered from its result."""
        messages = [system_message(self.prompts.get(self.config.prompt)), user_message(user_text), *(starting or [])]
        state = _State()
        self._seed(state, starting or [], starting_results or {})
        try:
            while True:
                self._check_limits(ctx, state)
                outcome = await self._one_step(ctx, messages, state)
                if outcome.output is not None:
                    return self._result(outcome.output, StopReason.SUBMITTED, state)
                if outcome.budget_stop is not None:
                    raise LoopStopped(outcome.budget_stop)
                if outcome.mistakes:
                    state.mistakes += 1
                    if state.mistakes > self.config.corrective_turns:
                        raise LoopStopped(StopReason.WIRE_FORMAT)
        except LoopStopped as stop:
            log.info("%s stopped run=%s reason=%s steps=%d", self.config.stage, ctx.run_id, stop.reason.value, state.steps)
            return self._result(None, stop.reason, state)

    def _seed(self, state: _State, starting: list[dict[str, Any]], given: Mapping[str, dict[str, Any]]) -> None:
        """Remember the starting calls as if the loop had made them (ids used, results reusable for repeats).

        `given` holds the projections the starting tool messages were written from (tool_call_id -> projection):
        a repeat's answer is only ever written back with tool_message, the same json.dumps, which writes a projection
        and its decoded text alike, so the projection is remembered as it is rather than decoded again."""
        results = {m.get("tool_call_id"): m.get("content") for m in starting if m.get("role") == "tool"}
        for message in starting:
            for wire in message.get("tool_calls") or []:
                call = ModelToolCall(id=wire["id"], name=wire["function"]["name"], arguments=wire["function"]["arguments"])
                state.used_ids.add(str(call.id))
                state.keyed.add(call.name)
                key = self._repeat_key(call, state)
                content = results.get(call.id)
                if key is not None and isinstance(content, str):
                    known = given.get(str(call.id))
                    state.seen[key] = known if known is not None else json.loads(content)

    def _check_limits(self, ctx: RunContext, state: _State) -> None:
        if ctx.cancelled.is_set():
            raise LoopStopped(StopReason.CANCELLED)
        if ctx.seconds_left() <= 0:
            raise LoopStopped(StopReason.DEADLINE)
        max_steps = ctx.budgets.max_steps if self.config.max_steps is None else min(self.config.max_steps, ctx.budgets.max_steps)
        if state.steps >= max_steps:
            raise LoopStopped(StopReason.BUDGET_STEPS)
        if max(ctx.observation_bytes, state.observation_bytes) >= ctx.budgets.max_observation_bytes:
            raise LoopStopped(StopReason.BUDGET_OBSERVATION)

    async def _one_step(self, ctx: RunContext, messages: list[dict[str, Any]], state: _State) -> _Step[OutT]:
        state.steps += 1
        ctx.steps = state.steps
        await self._report_progress(ctx, state)
        reply = await self.step.call(messages, self.config.tools, step=state.steps, ctx=ctx)
        outcome: _Step[OutT] = _Step()
        if not reply.tool_calls:
            # Only the start of a reply without calls goes back: a model that wrote 1 MB must not be sent it again.
            messages.append(assistant_message((reply.content or "")[:ECHOED_CONTENT_CHARS], [], []))
            messages.append(user_message(self.config.correction))
            outcome.mistakes.append("no function call")
            return outcome
        projections, fresh = await self._run_tools(ctx, reply, state, outcome)
        answers: list[dict[str, Any]] = []
        wire_ids: list[str] = []
        for index, call in enumerate(reply.tool_calls):
            if index in fresh:  # the boundary's id (it mints one when the model's is missing or used)
                wire_id = str(fresh[index].get("tool_call_id") or state.wire_id(call.id))
                state.used_ids.add(wire_id)
                answers.append(tool_message(wire_id, fresh[index]))
                self._note_projection(fresh[index], answers[-1]["content"], outcome, ctx, state)
            elif index in projections:
                wire_id = state.wire_id(call.id)
                answers.append(tool_message(wire_id, projections[index]))
            else:
                wire_id = state.wire_id(call.id)
                answers.append(tool_message(wire_id, self._handle_other(call, outcome)))
            wire_ids.append(wire_id)
        messages.append(assistant_message(reply.content, reply.tool_calls, wire_ids))
        messages.extend(answers)
        return outcome

    async def _report_progress(self, ctx: RunContext, state: _State) -> None:
        if ctx.progress is not None:
            # The model reads what the tools returned and picks the next query; no draft exists yet.
            update = ProgressUpdate(stage=ProgressStage.PLANNING, step=state.steps, tool_calls=ctx.tool_calls)
            await ctx.progress.update(ctx.run_id, update)

    async def _run_tools(
        self, ctx: RunContext, reply: ModelReply, state: _State, outcome: _Step[OutT]
    ) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
        """Repeated calls' answers and fresh calls' projections, by position; a repeat reuses the earlier projection."""
        fresh: dict[str, list[int]] = {}
        results: dict[int, dict[str, Any]] = {}
        deferred: dict[int, ModelToolCall] = {}
        names = Counter(call.name for call in reply.tool_calls)
        for index, call in enumerate(reply.tool_calls):
            if call.name not in self.config.tool_names:
                continue
            if call.name not in state.keyed:
                if call.name not in state.once and names[call.name] == 1:
                    deferred[index] = call  # the tool's first call: no earlier call it could repeat
                    fresh[f"#{index}"] = [index]
                    continue
                self._key_earlier(call.name, state)
            key = self._repeat_key(call, state)
            if key is not None and key in state.seen:
                results[index] = {**state.seen[key], "note": REPEAT_NOTE}
                state.repeated += 1
            elif key is not None and key in fresh:
                fresh[key].append(index)
            else:
                fresh[key or f"#{index}"] = [index]
        firsts = [positions[0] for positions in fresh.values()]
        invoked = await self._invoke_all(ctx, [reply.tool_calls[i] for i in firsts], outcome)
        ran: dict[int, dict[str, Any]] = {}
        for (key, positions), projection in zip(fresh.items(), invoked, strict=True):
            failed = projection.get("error") or projection.get("evidence_status") == EvidenceStatus.ERROR.value
            if positions[0] in deferred:
                state.once[deferred[positions[0]].name] = (deferred[positions[0]], None if failed else projection)
            elif not key.startswith("#") and not failed:
                state.seen[key] = projection
            ran[positions[0]] = projection
            for later in positions[1:]:
                results[later] = {**projection, "note": REPEAT_NOTE}
                state.repeated += 1
        return results, ran

    async def _invoke_all(
        self, ctx: RunContext, calls: list[ModelToolCall], outcome: _Step[OutT]
    ) -> list[dict[str, Any]]:
        if not calls:
            return []
        if len(calls) == 1:  # one call needs no gather (and no task)
            return [await race(ctx, self._invoke(ctx, calls[0], outcome))]
        return list(await race(ctx, asyncio.gather(*(self._invoke(ctx, c, outcome) for c in calls))))

    async def _invoke(self, ctx: RunContext, call: ModelToolCall, outcome: _Step[OutT]) -> dict[str, Any]:
        if decode_arguments(call.arguments) is None:
            outcome.mistakes.append(f"{call.name}: arguments are not a JSON object")
        return await self.boundary.invoke(ctx, call.id, call.name, call.arguments)

    def _key_earlier(self, name: str, state: _State) -> None:
        """A tool is called again: from now on its calls get keys, its earlier call's included."""
        state.keyed.add(name)
        earlier = state.once.pop(name, None)
        if earlier is not None:
            call, projection = earlier
            key = self._repeat_key(call, state)
            if key is not None and projection is not None:
                state.seen[key] = projection

    def _repeat_key(self, call: ModelToolCall, state: _State) -> str | None:
        """The call's repeat key, worked out once per run for each (tool, raw argument text)."""
        raw = (call.name, call.arguments)
        if raw not in state.keys:
            state.keys[raw] = self._normalised_key(call)
        return state.keys[raw]

    def _normalised_key(self, call: ModelToolCall) -> str | None:
        arguments = decode_arguments(call.arguments)
        if arguments is None or self.config.normalise is None:
            return None
        normalised = self.config.normalise(call.name, arguments)
        if normalised is None:
            return None
        return call.name + ":" + json.dumps(normalised, sort_keys=True, default=str)

    def _note_projection(
        self, projection: dict[str, Any], wire_text: str, outcome: _Step[OutT], ctx: RunContext, state: _State
    ) -> None:
        """Count a fresh projection; wire_text is its tool message content (its size without a second encoding)."""
        state.tool_calls += 1
        state.observation_bytes += ascii_json_size(wire_text)
        error = projection.get("error")
        if isinstance(error, dict) and error.get("code") == BUDGET_EXHAUSTED:
            outcome.budget_stop = budget_stop_reason(ctx)

    def _handle_other(self, call: ModelToolCall, outcome: _Step[OutT]) -> str:
        """Answer a non-tool call: accept a valid submit, or explain the wire-format mistake."""
        submit = self.config.submit_name
        if call.name != submit:
            outcome.mistakes.append(f"unknown function {call.name!r}")
            available = ", ".join([*sorted(self.config.tool_names), submit])
            return f"Wire-format error: unknown function {call.name!r}. Available: {available}."
        arguments = decode_arguments(call.arguments)
        if arguments is None:
            outcome.mistakes.append("submit arguments are not a JSON object")
            return f"Wire-format error: the arguments of {submit} must be one JSON object. Submit again."
        try:
            parsed = self.config.output.model_validate(arguments)
        except ValidationError as exc:
            outcome.mistakes.append("submit schema violation")
            return f"Wire-format error: the arguments of {submit} violate its schema ({validation_summary(exc)}). Submit again."
        if outcome.output is None:
            outcome.output = parsed
        return "Received."

    def _result(self, output: OutT | None, reason: StopReason, state: _State) -> LoopResult[OutT]:
        return LoopResult(output=output, stop_reason=reason, steps=state.steps, tool_calls=state.tool_calls,
                          repeated_calls=state.repeated)
