"""The offline demo (`diagbot demo`): bundled scenarios over the demo data with recorded model responses.

Recorded responses live in `demo/scenarios/*.json` and are served by the local OpenAI-compatible server
(testkit/openai_server.py), so the real openai client, agent loop, ToolBoundary, guard and release run
unchanged. Tool call ids are only known at run time, so recorded replies name calls symbolically:
`{{call:N}}` is replaced by the id of the N-th tool call of the request being answered — the N-th tool
result in the conversation, or, for a request without tool results (evidence repair), the N-th
`tool_call_id` named in its input. `{{doc:N}}` is the first runbook document the N-th tool result returned
(knowledge answers cite documents by path).
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from core.bootstrap import Services, build_services
from core.contracts.release import FallbackType, Outcome, ReleaseOutcome
from core.contracts.run import SessionKey, Turn
from core.settings import DEMO_CLOCK, DEMO_SCENARIOS, Settings
from entrypoints.outcome_text import render_outcome, render_timeline
from testkit.openai_server import FakeOpenAIServer

SCENARIOS_DIR = DEMO_SCENARIOS
RECORDED_MODEL = "recorded-demo-model"

_PLACEHOLDER = re.compile(r"\{\{(call|doc|look):(\d+)\}\}")
_CITED_ID = re.compile(r'"tool_call_id"\s*:\s*"([^"]+)"')

Print = Callable[[str], None]


class Expectation(BaseModel):
    """What a scenario must produce for the offline demo to pass."""

    outcome: Outcome
    fallback_type: FallbackType | None = None
    request_contains: list[str] = Field(
        default_factory=list, description="Texts some model request of this scenario must contain."
    )


class Scenario(BaseModel):
    """One demo turn: the question, its thread, the recorded model responses and the expected outcome."""

    name: str
    question: str
    thread: str = Field(description="Scenarios sharing a thread are turns of one session, run in file order.")
    explain: str = ""
    expect: Expectation
    responses: list[dict[str, Any]]


def load_scenarios(folder: Path = SCENARIOS_DIR) -> list[Scenario]:
    """All scenarios of the folder, in file-name order."""
    return [Scenario.model_validate_json(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def tool_results_in(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The projections of the tool results in a request's conversation, in order."""
    results = []
    for message in request.get("messages", []):
        if message.get("role") == "tool":
            try:
                projection = json.loads(message.get("content") or "")
            except (TypeError, ValueError):
                projection = None
            if not isinstance(projection, dict):
                projection = {}
            projection.setdefault("tool_call_id", str(message.get("tool_call_id", "")))
            results.append(projection)
    return results


FIRST_LOOK_PREFIX = "first_look_"
"""The first look's calls (core/steps/first_look.py) are named {{look:N}} in recordings, not {{call:N}}: a recording
made with the first look off still fits a run with it on."""


def agent_results_in(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of the agent's own calls (the first look's left out), in order."""
    return [p for p in tool_results_in(request) if not str(p["tool_call_id"]).startswith(FIRST_LOOK_PREFIX)]


def look_ids_in(request: dict[str, Any]) -> list[str]:
    """The first look's call ids in a request, in order."""
    return [str(p["tool_call_id"]) for p in tool_results_in(request) if str(p["tool_call_id"]).startswith(FIRST_LOOK_PREFIX)]


def call_ids_in(request: dict[str, Any]) -> list[str]:
    """The tool call ids a request knows, in order (tool results first; else ids named in its input)."""
    ids = [str(p["tool_call_id"]) for p in agent_results_in(request)]
    if ids or look_ids_in(request):
        return ids
    if ids:
        return ids
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            for found in _CITED_ID.findall(content):
                if found not in ids:
                    ids.append(found)
    return ids


def docs_in(request: dict[str, Any]) -> list[str]:
    """For each tool result of the request, the first document it returned ('' when none)."""
    docs = []
    for projection in agent_results_in(request):
        blocks = projection.get("evidence_blocks") or [{}]
        docs.append(str(blocks[0].get("doc", "")))
    return docs


def substitute(value: Any, ids: list[str], docs: list[str] | None = None, looks: list[str] | None = None) -> Any:
    """Replace every {{call:N}} / {{doc:N}} / {{look:N}} in a recorded value by the N-th call id / document / first
    look call id (1-based)."""
    if isinstance(value, str):
        def one(match: re.Match[str]) -> str:
            kind, n = match.group(1), int(match.group(2))
            pool = ids if kind == "call" else (looks or []) if kind == "look" else (docs or [])
            if not 1 <= n <= len(pool):
                raise ValueError(f"recorded reply names {kind} {n} but the request has {len(pool)}")
            return pool[n - 1]

        return _PLACEHOLDER.sub(one, value)
    if isinstance(value, list):
        return [substitute(v, ids, docs, looks) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, ids, docs, looks) for k, v in value.items()}
    return value


def recorded_reply(entry: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A server script entry answering with the recorded reply, its placeholders bound to the request's calls."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        try:
            return dict(substitute(entry, call_ids_in(request), docs_in(request), look_ids_in(request)))
        except ValueError as exc:  # a recording that does not fit the run: answer loudly, not with a dropped socket
            return {"status": 400, "body": {"error": {"message": str(exc), "type": "invalid_request_error"}}}

    return reply


def demo_settings(database_url: str, *, base_url: str | None = None, live_from: Settings | None = None) -> Settings:
    """Settings of the demo: bundled data, pinned clock, in-process stores, a temporary SQLite database.

    Live mode keeps the configured model endpoint of `live_from` and still uses the bundled data."""
    if live_from is not None:
        return Settings(
            openai_base_url=live_from.openai_base_url, openai_api_key=live_from.openai_api_key,
            diag_model=live_from.diag_model, diag_guard_model=live_from.diag_guard_model, redis_url=None,
            database_url=database_url, diag_clock=live_from.diag_clock or DEMO_CLOCK,
        )
    return Settings(
        openai_base_url=base_url, openai_api_key="recorded", diag_model=RECORDED_MODEL, redis_url=None,
        database_url=database_url, diag_clock=DEMO_CLOCK,
    )


async def run_demo(
    *, live: bool = False, settings: Settings | None = None, out: Print = print, scenarios: list[Scenario] | None = None,
    state_dir: Path | None = None,
) -> int:
    """Run every scenario; 0 when each produced its expected outcome (always 0 in live mode if all ran).

    The runs are kept in a SQLite database under `state_dir` (a new temporary folder by default, left in place), so
    the `diagbot trace` command printed after each run works afterwards."""
    scenarios = scenarios if scenarios is not None else load_scenarios()
    folder = state_dir if state_dir is not None else Path(tempfile.mkdtemp(prefix="diagbot-demo-"))
    database_url = f"sqlite+aiosqlite:///{folder.resolve()}/demo.db"
    if live:
        out("diagbot demo --live: the bundled questions against the configured model endpoint (no outcome checks).")
        services = await build_services(demo_settings(database_url, live_from=settings or Settings()))
        try:
            services.require_model()
            for scenario in scenarios:
                await _play(services, scenario, out)
        finally:
            await services.aclose()
        return 0
    out("diagbot demo: model responses are RECORDED (demo/scenarios/*.json), served by a local "
        "OpenAI-compatible server; tools, guards and release run for real on the bundled demo data "
        f"with the clock pinned to {DEMO_CLOCK.isoformat()}.")
    async with FakeOpenAIServer(models=[RECORDED_MODEL]) as server:
        services = await build_services(demo_settings(database_url, base_url=server.base_url))
        script = RecordedScript(server)
        try:
            failed = [s.name for s in scenarios if not await _play_recorded(services, script, server, s, out)]
        finally:
            await services.aclose()
    out("")
    if failed:
        out(f"FAILED: {len(failed)} of {len(scenarios)} scenarios: " + "; ".join(failed))
        return 1
    out(f"OK: all {len(scenarios)} scenarios produced their expected outcome.")
    return 0


class RecordedScript:
    """The current scenario's recorded replies; the server's script entries all read from it."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self._server = server
        self._pending: deque[dict[str, Any]] = deque()

    def load(self, responses: list[dict[str, Any]]) -> None:
        """Make these the replies to serve next, in order."""
        self._pending = deque(responses)
        missing = len(responses) + 1 - self._server.remaining
        self._server.push(*(self._next for _ in range(max(0, missing))))

    def unused(self) -> int:
        """Replies of the current scenario that no request consumed (then dropped)."""
        left = len(self._pending)
        self._pending.clear()
        return left

    def _next(self, request: dict[str, Any]) -> dict[str, Any]:
        if not self._pending:
            error = {"message": "recorded responses exhausted", "type": "invalid_request_error"}
            return {"status": 400, "body": {"error": error}}
        return recorded_reply(self._pending.popleft())(request)


async def _play_recorded(services: Services, script: RecordedScript, server: FakeOpenAIServer, scenario: Scenario,
                         out: Print) -> bool:
    first_request = len(server.requests)
    script.load(scenario.responses)
    outcome = await _play(services, scenario, out)
    problems = []
    if outcome.outcome is not scenario.expect.outcome or outcome.fallback_type != scenario.expect.fallback_type:
        expected = scenario.expect.outcome.value + (f" ({scenario.expect.fallback_type.value})"
                                                    if scenario.expect.fallback_type else "")
        problems.append(f"expected {expected}")
    if unused := script.unused():
        problems.append(f"{unused} recorded responses unused")
    seen = json.dumps(server.requests[first_request:])
    problems += [f"no model request contained {text!r}" for text in scenario.expect.request_contains if text not in seen]
    out(f"check: {'as expected' if not problems else 'MISMATCH: ' + '; '.join(problems)}")
    return not problems


async def _play(services: Services, scenario: Scenario, out: Print) -> ReleaseOutcome:
    out("")
    out(f"=== {scenario.name} ===")
    if scenario.explain:
        out(scenario.explain)
    out(f"question (thread {scenario.thread}): {scenario.question}")
    turn = Turn(session=SessionKey(team="demo", channel="cli", thread_ts=scenario.thread), text=scenario.question,
                user="demo", message_ts=scenario.thread)
    outcome = await services.chat_service.handle(turn)
    out(render_outcome(outcome))
    out(f"trace it: DATABASE_URL={shlex.quote(services.settings.database_url)} diagbot trace {outcome.run_id}")
    out("timeline:")
    run = await services.chat_service.get_run(outcome.run_id)
    out(render_timeline(run, await services.chat_service.timeline(outcome.run_id)))
    return outcome
