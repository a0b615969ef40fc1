"""The planted-secrets corpus through the real tools and ToolBoundary: 0 markers in any projection, every item shown."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.bootstrap import Services, build_services
from core.contracts.evidence import EvidenceStatus
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.settings import DEMO_CLOCK, Settings
from tests.fixtures.planted import MARKERS, PLANTED, PlantedData, leaked, tool_calls, write_planted


@pytest.fixture
async def planted(tmp_path: Path) -> AsyncIterator[tuple[Services, PlantedData]]:
    data = write_planted(tmp_path / "data")
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK, **data.settings())
    services = await build_services(settings)
    yield services, data
    await services.aclose()


def test_the_corpus_is_big_varied_and_uniquely_marked() -> None:
    """At least 50 secrets, in logs, log fields, runbooks and SQL rows, every marker unique and not a prefix of another."""
    assert len(PLANTED) >= 50
    assert {p.place for p in PLANTED} == {"logs", "log fields", "knowledge", "sql"}
    assert len(set(MARKERS)) == len(MARKERS)
    assert not any(a != b and b.startswith(a) for a in MARKERS for b in MARKERS)


async def test_no_marker_reaches_any_projection_and_every_planted_item_is_shown(
        planted: tuple[Services, PlantedData]) -> None:
    """Every call's projection (what the agent sees) is free of markers, while the line, section or row that held each
    secret is shown (its context word is there), and the redaction marker says something was hidden."""
    services, data = planted
    ctx = RunContext(run_id="run_planted", session_key="T:C:1", query="q",
                     timeline=RunTimeline("run_planted", services.timeline_store))
    shown = []
    for i, (name, args) in enumerate(tool_calls()):
        projection = await services.boundary.invoke(ctx, f"call_p{i}", name, args)
        assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND.value, (name, args, projection)
        shown.append(json.dumps(projection, ensure_ascii=False))
    text = "\n".join(shown)
    assert leaked(text) == []
    missing = [c for c in data.contexts if c not in text]
    assert missing == [], f"planted items not shown: {missing}"
    assert text.count("[redacted]") >= len(PLANTED)
    records = await services.canonical.list_run("run_planted")
    assert leaked(json.dumps([r.projection for r in records], ensure_ascii=False)) == []
    # The canonical record keeps the raw result (harness only): the markers are there, so the test above is not vacuous.
    raw = await services.canonical.list_run("run_planted", with_raw=True)
    assert len(leaked(json.dumps([r.raw_result.model_dump(mode="json") for r in raw if r.raw_result]))) >= 50
