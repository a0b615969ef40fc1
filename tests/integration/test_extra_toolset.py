"""A new evidence source is one folder (issue 18): the test-only toolset in tests/extra_toolset/, registered by one line,
runs end to end through the real services — the agent is offered it and calls it, the boundary keeps its canonical
record and bounded projection, the EvidenceGuard grounds a number its declared kinds show and rejects an invented one,
the fallback states its fact, Show evidence renders its items, and `diagbot check` prints its line — while nothing in
core/, bot/ or entrypoints/ names it."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.evidence import evidence_view
from core.bootstrap import Services, build_services
from core.contracts.evidence import EvidenceStatus, InvocationState
from core.contracts.release import FallbackType, Outcome, ReleaseOutcome
from core.contracts.run import SessionKey, Turn
from core.health.catalog import config_checks
from core.health.result import Level, run_checks
from core.settings import DEMO_CLOCK, Settings
from core.tools.contract import QuantityKinds
from core.tools.registry import REGISTRY, using_registry
from testkit.models import ScriptedChatModel, reply
from tests.extra_toolset.spec import NAME, DeploysSpec
from tests.extra_toolset.toolset import DeploysToolset
from tests.paths import REPO_ROOT

DEPLOYS = [
    {"service": "order-service", "version": "4.18.0", "started_at": "2026-11-29T22:55:00+00:00", "took": 95, "pods": 12},
    {"service": "order-service", "version": "4.17.2", "started_at": "2026-11-27T10:10:00+00:00", "took": 80, "pods": 12},
    {"service": "payment-service", "version": "2.3.1", "started_at": "2026-11-29T21:00:00+00:00", "took": 40, "pods": 4},
]
CALL = "call_deploys1"


def draft(text: str) -> dict[str, Any]:
    return {
        "conclusion": None,
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": text, "tool_call_ids": [CALL]}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "order-service deploys", "missing_info": []},
    }


def script(text: str, *, supported: bool) -> list[Any]:
    steps: list[Any] = [
        reply(json.dumps({"intent": "DIAGNOSIS"})),
        reply(calls=[(CALL, NAME, json.dumps({"service": "order-service"}))]),
        reply(calls=[("call_submit", "submit_diagnosis_draft", json.dumps(draft(text)))]),
    ]
    if supported:
        return [*steps, reply(json.dumps({"verdict": "SUPPORTED", "reason": "the listed deploy shows it"}))]
    # The repair keeps the invented number (it may not add facts, and cannot make this one true).
    return [*steps, reply(calls=[("call_fix", "submit_diagnosis_draft", json.dumps(draft(text)))])]


@pytest.fixture
def registered() -> Iterator[None]:
    """The registry line: REGISTRY plus the deploys toolset, for this test only."""
    with using_registry(REGISTRY.with_toolsets(DeploysToolset(DEPLOYS))):
        yield


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # No first look: the agent's own call is the one under test (the first look would have made it already).
    return Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK,
                    diag_model="scripted", openai_base_url="http://127.0.0.1:9/v1", diag_first_look=False)


@pytest.fixture
async def services(registered: None, settings: Settings) -> AsyncIterator[tuple[Services, ScriptedChatModel]]:
    model = ScriptedChatModel()
    built = await build_services(settings, model=model)
    yield built, model
    await built.aclose()


async def ask(services: Services) -> ReleaseOutcome:
    turn = Turn(session=SessionKey(team="T1", channel="C1", thread_ts=uuid.uuid4().hex), user="U1",
                text="why is order-service failing since the deploy?", message_ts=uuid.uuid4().hex)
    return await services.chat_service.handle(turn)


async def test_the_agent_calls_it_and_a_number_its_kinds_show_is_published(
        services: tuple[Services, ScriptedChatModel]) -> None:
    built, model = services
    model.push(*script("order-service's 4.18.0 deploy took 95 seconds over 12 pods.", supported=True))
    outcome = await ask(built)

    agent_request = model.requests[1]
    assert NAME in agent_request.tool_names  # offered from its argument model, like a native tool
    assert outcome.outcome is Outcome.SUCCESS, outcome
    [record] = await built.canonical.list_run(outcome.run_id)
    assert (record.tool_name, record.state, record.evidence_status) == (NAME, InvocationState.READY,
                                                                         EvidenceStatus.EVIDENCE_FOUND)
    projection = record.projection or {}
    assert projection["tool_call_id"] == CALL
    assert projection["count"] == 2
    assert projection["service"] == "order-service"
    assert [d["version"] for d in projection["deploys"]] == ["4.18.0", "4.17.2"]
    assert outcome.report is not None
    [source] = outcome.report.sources
    assert source.label == f"{NAME} order-service (2 deploys)"

    blocks = json.dumps(evidence_view(outcome.report, 0), ensure_ascii=False)
    assert "4.18.0" in blocks
    assert "2026-11-29T22:55:00+00:00" in blocks
    assert '"type": "table"' in blocks


async def test_an_invented_number_is_rejected_and_the_fallback_states_its_fact(
        services: tuple[Services, ScriptedChatModel]) -> None:
    built, model = services
    model.push(*script("order-service's 4.18.0 deploy took 95 seconds and restarted 42 pods.", supported=False))
    outcome = await ask(built)

    assert outcome.outcome is Outcome.SAFE_FALLBACK, outcome
    assert outcome.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    assert outcome.fallback is not None
    [fact] = outcome.fallback.observed_facts
    assert fact.text == "Deploys of order-service: the newest is 4.18.0."
    assert fact.table is not None
    assert fact.table.rows[0][:2] == ["4.18.0", "2026-11-29T22:55:00+00:00"]
    codes = {v.code for v in outcome.violations}
    assert codes == {"NUMBER_NOT_IN_EVIDENCE"}, outcome.violations
    assert any("42" in v.message for v in outcome.violations)


async def test_its_check_is_a_line_of_diagbot_check(registered: None, settings: Settings) -> None:
    results = await run_checks(config_checks(settings, serving=False))
    [line] = [r for r in results if r.name == f"tool.{NAME}"]
    assert line.level is Level.OK
    assert line.line().startswith("ok")
    assert "3 deploys listed" in line.line()


def test_nothing_outside_its_folder_names_it() -> None:
    """The code (core/, bot/, entrypoints/, testkit/) never mentions the tool: the registry line brought it in."""
    named = [str(p.relative_to(REPO_ROOT)) for package in ("core", "bot", "entrypoints", "testkit")
             for p in (REPO_ROOT / package).rglob("*.py") if NAME in p.read_text(encoding="utf-8")]
    assert named == []


async def test_the_duration_is_grounded_only_because_its_kind_is_declared(
        services: tuple[Services, ScriptedChatModel], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the declaration `took: 95` is a bare number: '95 seconds' is then not shown, so the guard's reading
    above came from the spec's QuantityKinds, not from a guess."""
    monkeypatch.setattr(DeploysSpec, "quantities", QuantityKinds())
    built, model = services
    model.push(*script("order-service's 4.18.0 deploy took 95 seconds over 12 pods.", supported=False))
    outcome = await ask(built)
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert {v.code for v in outcome.violations} == {"NUMBER_NOT_IN_EVIDENCE"}
    assert any("95 seconds" in v.message for v in outcome.violations)
