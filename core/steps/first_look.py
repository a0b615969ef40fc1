"""The first look: the cheap queries an on-call engineer runs first, run by the bot before the agent's first step.

For the services and the window the question (or alert) names, each source of evidence proposes a few calls —
what each service logs at ERROR and WARN and how often its most frequent message occurs (core/tools/logs/
first_look.py), the latest rows of a deployments / changes table when the database has one
(core/tools/sql/first_look.py), and whatever a registered toolset proposes through the contract's `first_look`
hook: the series of each named service that moved most against the time before the window when a metrics backend
is configured (core/tools/metrics/first_look.py), MCP toolsets' calls. Every call is an ordinary tool call of the
run through the ToolBoundary: validated, bounded, one canonical record, citable; the agent gets them as its starting
evidence. Deterministic: no model is asked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from core.contracts.evidence import EvidenceStatus
from core.contracts.run import EventType
from core.evidence.redaction import DEFAULT_RULES, find_secrets
from core.ports import ToolInvoker
from core.run import RunContext
from core.tools.contract import PlannedCall

log = logging.getLogger(__name__)

MAX_SERVICES = 2
MAX_CALLS = 10
DEFAULT_WINDOW = timedelta(minutes=60)
MAX_LOOKBACK = timedelta(hours=24)
FIRST_LOOK_NOTE = (
    "First look: before your first step the bot ran the calls below, the queries an on-call engineer runs first "
    "for this question. Their results are evidence of this run: cite their tool_call_ids like your own calls'. "
    "Query further where they leave the cause open; do not repeat them.")

FIRST_LOOK_NEXT = (
    "Those were the first look's results. Your turn: call the tools you need for what they leave open, or call "
    "submit_diagnosis_draft now with a draft whose items cite the tool_call_ids above.")

_SERVICE_SUFFIXES = ("service", "api", "svc", "worker", "gateway", "server", "app", "web", "backend", "frontend",
                     "proxy", "cache", "db", "queue", "consumer", "producer", "job")
_HYPHENATED = re.compile(r"\b[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+\b", re.IGNORECASE)
_LABELLED = re.compile(r"\b(?:service|app|job)\s*[=:]\s*\"?([A-Za-z0-9][\w.-]{0,62})")
_NOT_SERVICES = frozenset({"follow-up", "read-only", "out-of-memory", "real-time", "e-mail", "crash-loop", "re-run",
                           "roll-back", "time-out", "on-call", "up-to-date", "so-called", "self-hosted"})
_SINCE = re.compile(r"\b(since|from|after|around|at|about)\s+(?:about\s+|around\s+)?"
                    r"(noon|midnight|(\d{1,2})(?::(\d{2}))?\s*(am|pm)?)\b", re.IGNORECASE)
_SINCE_MOMENT = re.compile(r"\bsince (\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)(?:\s*UTC|Z)")
ALERT_LEAD = timedelta(minutes=15)


@dataclass(frozen=True)
class Scope:
    """What the first look is about: the services named and the window (None: each tool's default window)."""

    services: tuple[str, ...]
    start: datetime | None
    end: datetime


def services_in(text: str) -> tuple[str, ...]:
    """Service names the question or alert names: `service=x` labels, then hyphenated names that look like
    services (order-service, checkout-api), then other hyphenated names; at most MAX_SERVICES. Nothing inside a
    secret the redaction rules find (a pasted `sk_live_…` or `ghp_…` token is no service name, and as a tool
    argument it would be kept in the call's canonical record)."""
    secrets = [(f.start, f.end) for f in find_secrets(text, DEFAULT_RULES)]

    def shown(match: re.Match[str], group: int = 0) -> bool:
        start, end = match.span(group)
        return not any(start < s_end and s_start < end for s_start, s_end in secrets)

    found: list[str] = [m.group(1).lower() for m in _LABELLED.finditer(text) if shown(m, 1)]
    hyphenated = [m.group(0).lower() for m in _HYPHENATED.finditer(text)
                  if m.group(0).lower() not in _NOT_SERVICES and shown(m)]
    found += [name for name in hyphenated if re.split(r"[-_]", name)[-1] in _SERVICE_SUFFIXES]
    found += hyphenated
    unique = list(dict.fromkeys(found))
    return tuple(unique[:MAX_SERVICES])


def alert_start_in(text: str, now: datetime) -> datetime | None:
    """The earliest "since 2026-11-29 23:02:00 UTC" an alert's question states (core/alerts/question.py), less
    ALERT_LEAD: a rule fires only after its condition held for its `for:` time, so the change began earlier."""
    starts = []
    for match in _SINCE_MOMENT.finditer(text):
        try:
            moment = datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}")
        except ValueError:
            continue
        moment = moment.replace(tzinfo=UTC).astimezone(now.tzinfo) if now.tzinfo is not None else moment
        if timedelta(0) <= now - moment <= MAX_LOOKBACK:
            starts.append(moment - ALERT_LEAD)
    return min(starts, default=None)


def window_in(text: str, now: datetime) -> datetime | None:
    """The start of the window the question names ("since 23:00", "around 21:05", "since about 8"), on the clock's
    day (the day before when that time is still to come), or an alert's start (alert_start_in); None when it names
    none."""
    if (alert_start := alert_start_in(text, now)) is not None:
        return alert_start
    for match in _SINCE.finditer(text):
        word, hour_text, minute_text, meridiem = match.group(1).lower(), match.group(3), match.group(4), match.group(5)
        if match.group(2).lower() in ("noon", "midnight"):
            hour, minute = (12 if match.group(2).lower() == "noon" else 0), 0
        elif hour_text is None or (minute_text is None and meridiem is None and word in ("at", "from", "after")):
            continue  # "at 5" is too often not a time
        else:
            hour, minute = int(hour_text), int(minute_text or 0)
            if meridiem:
                hour = hour % 12 + (12 if meridiem.lower() == "pm" else 0)
        if hour > 23 or minute > 59:
            continue
        start = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if start > now:
            start -= timedelta(days=1)
        if word in ("around", "at", "about"):
            start -= timedelta(minutes=15)
        if now - start <= MAX_LOOKBACK:
            return start
    return None


Call = tuple[str, str, dict[str, Any], dict[str, Any]]
"""(tool_call_id, tool, arguments, projection) of one call made."""


@dataclass
class Look:
    """One run's first look in progress: its scope and the calls made, for the sources to read and add to."""

    ctx: RunContext
    scope: Scope
    invoke: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]
    made: dict[int, Call] = field(default_factory=dict)
    """Every call made by its number (first_look_<number>), numbered as it was started."""
    started: int = 0
    """Calls started so far (made, or still running)."""

    @property
    def calls(self) -> list[Call]:
        """Every call made, in the order they were started (their numbers' order)."""
        return [self.made[number] for number in sorted(self.made)]

    def window(self) -> dict[str, str]:
        """The scope's window as tool arguments (empty: the tool's default window)."""
        if self.scope.start is None:
            return {}
        return {"start": self.scope.start.isoformat(), "end": self.scope.end.isoformat()}

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Run one call through the boundary; None when the tool is not configured or the look is out of calls."""
        return await self.invoke(tool, arguments)

    async def calls_at_once(self, planned: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any] | None]:
        """Calls that do not depend on each other, run at the same time; each is numbered as when they run one after
        the other (the first of them first_look_<n + 1>, and so on: each is started, so numbered, before the next
        one is), and the answers come back in their order. The look's wall time is the slowest one's, not their
        sum. A TaskGroup: when one fails or the run is cancelled, none is left running."""
        if len(planned) < 2:
            return [await self.call(tool, arguments) for tool, arguments in planned]
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self.call(tool, arguments)) for tool, arguments in planned]
        return [task.result() for task in tasks]


class FirstLookSource(Protocol):
    """One source's first look: it makes its calls through `look.call` (reading earlier results if it likes)."""

    async def __call__(self, look: Look) -> None: ...


PlanContract = Callable[[str | None, datetime, datetime], Sequence[PlannedCall]]


class FirstLook:
    """Runs the sources for a run's scope, each call through the boundary; records a FIRST_LOOK timeline event."""

    def __init__(self, boundary: ToolInvoker, sources: Sequence[FirstLookSource], available: Callable[[], Sequence[str]],
                 clock: Callable[[], datetime], *, contract: PlanContract | None = None, max_calls: int = MAX_CALLS) -> None:
        self.boundary = boundary
        self.sources = list(sources)
        self.available = available
        self.clock = clock
        self.contract = contract
        self.max_calls = max_calls

    def scope(self, question: str) -> Scope:
        """The services and window the question names."""
        now = self.clock()
        return Scope(services=services_in(question), start=window_in(question, now), end=now)

    async def run(self, ctx: RunContext) -> list[Call]:
        """Every source's calls for the run's question; never raises (a failing source is logged and skipped)."""
        scope = self.scope(ctx.query)
        offered = set(self.available())
        look = Look(ctx=ctx, scope=scope, invoke=lambda tool, args: self._invoke(look, offered, tool, args))
        for source in [*self.sources, self._contract_source]:
            try:
                await source(look)
            except Exception as exc:  # the first look helps; it never stops a run
                log.warning("first look source failed for %s: %s", ctx.run_id, type(exc).__name__)
        calls = look.calls
        found = sum(p.get("evidence_status") == EvidenceStatus.EVIDENCE_FOUND.value for *_, p in calls)
        tools = Counter(tool for _, tool, _, _ in calls)
        await ctx.timeline.record(EventType.FIRST_LOOK, {
            "services": ",".join(scope.services) or "none named", "calls": len(calls), "found": found,
            "tools": ",".join(f"{tool}={n}" for tool, n in tools.items()) or "none",
            "window": "named in the question" if scope.start is not None else "each tool's default"})
        return calls

    async def _contract_source(self, look: Look) -> None:
        """The calls registered toolsets propose through the contract's first_look hook (metrics, MCP)."""
        if self.contract is None:
            return
        start = look.scope.start or look.scope.end - DEFAULT_WINDOW
        contract = self.contract
        planned = [(p.tool, dict(p.arguments)) for service in look.scope.services or (None,)
                   for p in contract(service, start, look.scope.end)]
        await look.calls_at_once(planned)  # each toolset's calls stand alone

    async def _invoke(self, look: Look, offered: set[str], tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        if tool not in offered or look.started >= self.max_calls or look.ctx.cancelled.is_set():
            return None
        look.started += 1
        number = look.started
        call_id = f"first_look_{number}"
        projection = await self.boundary.invoke(look.ctx, call_id, tool, json.dumps(arguments))
        look.made[number] = (str(projection.get("tool_call_id") or call_id), tool, arguments, projection)
        return projection


def starting_messages(calls: Sequence[Call]) -> list[dict[str, Any]]:
    """The first look as the agent's conversation: its calls as an assistant turn and their results, like its own
    calls' (ERROR results are left out: they are not evidence and would only distract), then a user turn asking for
    the next step: a conversation that ends on tool results left small models with nothing to answer (Qwen2.5-Coder
    1.5B on llama-cpp-python replied with an empty message, eval/agent live run 2026-12-02)."""
    shown = [c for c in calls if c[3].get("evidence_status") != EvidenceStatus.ERROR.value]
    if not shown:
        return []
    assistant = {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
        for call_id, tool, arguments, _ in shown]}
    results = [{"role": "tool", "tool_call_id": call_id, "content": json.dumps(projection, ensure_ascii=False, default=str)}
               for call_id, _, _, projection in shown]
    return [assistant, *results, {"role": "user", "content": FIRST_LOOK_NEXT}]
