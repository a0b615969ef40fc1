"""A hanging model never outlives the run: the reviewer ends SEMANTIC_UNAVAILABLE before the deadline with the observed
facts, a hanging agent ends FAILURE at the deadline (real openai client, local fake server, real tools and guards)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from core.bootstrap import build_services
from core.contracts.release import FallbackType, Outcome, ReleaseOutcome
from core.contracts.run import Budgets, EventType, SessionKey, Turn
from core.release.release import POST_MARGIN_S
from core.settings import DEMO_CLOCK, Settings
from entrypoints.demo import recorded_reply
from testkit.openai_server import FakeOpenAIServer

HIKARI = {"service": "order-service", "query": "HikariPool", "level": "ERROR"}
DRAFT = {"conclusion": None, "action_plan": [], "recommendations": [],
         "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "order-service logged HikariPool connection errors.",
                       "tool_call_ids": ["{{call:1}}"]}],
         "limitations": {"scope": "order-service ERROR logs in the default window", "missing_info": []}}
HANG = {"delay_s": 120, "content": "never sent"}


async def ask(server: FakeOpenAIServer, tmp_path: Path, deadline_s: float) -> tuple[ReleaseOutcome, float, list[EventType]]:
    settings = Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="m", diag_clock=DEMO_CLOCK,
                        database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db")
    services = await build_services(settings, budgets=Budgets(deadline_s=deadline_s))
    try:
        turn = Turn(session=SessionKey(team="T", channel="C", thread_ts="1"), text="why is order-service failing?",
                    user="U", message_ts="1.1")
        started = time.monotonic()
        outcome = await services.chat_service.handle(turn)
        elapsed = time.monotonic() - started
        events = [e.type for e in await services.chat_service.timeline(outcome.run_id)]
    finally:
        await services.aclose()
    return outcome, elapsed, events


async def test_a_hanging_reviewer_gives_semantic_unavailable_before_the_deadline(tmp_path: Path) -> None:
    """The reviewer never answers: SAFE_FALLBACK / SEMANTIC_UNAVAILABLE with facts, inside deadline - margin."""
    async with FakeOpenAIServer() as server:
        server.push({"content": json.dumps({"intent": "DIAGNOSIS"})},
                    {"tool_calls": [{"id": "c1", "name": "query_logs", "arguments": HIKARI}]},
                    recorded_reply({"tool_calls": [{"id": "s", "name": "submit_diagnosis_draft", "arguments": DRAFT}]}),
                    HANG, HANG, HANG)
        outcome, elapsed, events = await ask(server, tmp_path, deadline_s=8.0)
    assert outcome.outcome is Outcome.SAFE_FALLBACK, outcome
    assert outcome.fallback_type is FallbackType.SEMANTIC_UNAVAILABLE
    assert outcome.fallback is not None
    assert outcome.fallback.observed_facts
    assert elapsed < 8.0 - POST_MARGIN_S + 1.0
    assert EventType.SEMANTIC_GUARD in events


async def test_a_hanging_agent_ends_in_failure_at_the_deadline_with_the_call_on_the_trace(tmp_path: Path) -> None:
    """The agent's model never answers: FAILURE shortly after the deadline, and the cut-off call is on the trace."""
    async with FakeOpenAIServer() as server:
        server.push({"content": json.dumps({"intent": "DIAGNOSIS"})}, HANG)
        outcome, elapsed, events = await ask(server, tmp_path, deadline_s=3.0)
    assert outcome.outcome is Outcome.FAILURE
    assert 2.5 < elapsed < 5.0
    assert events.count(EventType.MODEL_CALL) == 2
