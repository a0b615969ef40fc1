"""Checked drafts are kept (internal) and `diagbot replay` re-checks them under the current rules."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import Outcome, StoredDraft
from core.guard.evidence_guard import EvidenceGuard
from core.guard.replay import recheck, replay_all
from core.guard.rules import load_rules
from core.release.release import DiagnosisRelease
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from core.stores.sql.audit import SqlAuditStore
from core.stores.sql.db import Database
from core.stores.sql.migrate import upgrade
from entrypoints.cli import main
from testkit.release import FixedJudge, ScriptedRepairer
from tests.unit.test_guard_codes import RUN, run_records, valid_draft


def _invented() -> dict[str, Any]:
    draft = valid_draft()
    draft["analysis"][0]["text"] = "OOM 3 times in HikariPool-1."
    return draft


async def _released(draft: dict[str, Any], repaired: dict[str, Any] | None = None) -> tuple[InMemoryAuditStore, Outcome]:
    store = InMemoryCanonicalStore()
    for record in run_records():
        await store.put(record)
    audit = InMemoryAuditStore()
    repairer = ScriptedRepairer(result=DiagnosisDraft.model_validate(repaired) if repaired else None)
    release = DiagnosisRelease(EvidenceGuard(store, load_rules()), repairer, FixedJudge(), store, drafts=audit)
    ctx = RunContext(run_id=RUN, session_key="T:C:1", query="why?", timeline=RunTimeline(RUN, InMemoryTimelineStore()))
    outcome = await release.release(ctx, DiagnosisDraft.model_validate(draft))
    return audit, outcome.outcome


async def test_release_keeps_the_initial_and_the_repaired_draft_with_what_the_guard_read() -> None:
    """Both checks are kept: the draft, its verdict and codes, the rules version and the run's records (no raw)."""
    audit, outcome = await _released(_invented(), repaired=valid_draft())
    assert outcome is Outcome.SUCCESS
    kept = await audit.drafts(RUN)
    assert [(d.stage, d.valid, d.codes) for d in kept] == [("initial", False, ["NUMBER_NOT_IN_EVIDENCE"]), ("repair", True, [])]
    assert kept[0].rule_set_version == load_rules().rule_set_version
    assert {r["tool_call_id"] for r in kept[0].records} == {r.tool_call_id for r in run_records()}
    assert all("raw_result" not in r or r["raw_result"] is None for r in kept[0].records)


async def test_replay_under_the_same_rules_changes_nothing_and_a_rules_change_shows() -> None:
    """Same rules: the same verdicts. numeric_grounding off: the invented draft would now be released."""
    audit, _ = await _released(_invented())
    kept = await audit.drafts(RUN)
    same = await recheck(kept[0], load_rules())
    assert (same.valid, same.changed) == (False, False)
    lenient = load_rules().with_rule("numeric_grounding", enabled=False)
    summary = await replay_all(kept, lenient)
    assert [r.stored.run_id for r in summary.newly_released] == [RUN]
    assert summary.code_changes() == {"-NUMBER_NOT_IN_EVIDENCE": 1}


async def test_replay_works_after_the_canonical_records_expired() -> None:
    """The kept records stand in for Redis: a stored draft re-checks with an empty canonical store."""
    audit, _ = await _released(valid_draft())
    kept = (await audit.drafts(RUN))[0]
    assert (await recheck(kept, load_rules())).valid


async def _sqlite_with_drafts(path: Path) -> str:
    url = f"sqlite+aiosqlite:///{path}"
    db = Database(url)
    await upgrade(db)
    memory, _ = await _released(_invented())
    sql = SqlAuditStore(db)
    for stored in await memory.drafts(RUN):
        await sql.record_draft(stored)
    old = stored.model_copy(update={"run_id": "run-old", "recorded_at": datetime.now(UTC) - timedelta(days=30)})
    await sql.record_draft(old)
    assert [d.model_dump() for d in await sql.drafts(RUN)] == [d.model_dump() for d in await memory.drafts(RUN)]
    assert [d.run_id for d in await sql.drafts_since(datetime.now(UTC) - timedelta(days=7), 100)] == [RUN]
    await db.dispose()
    return url


def test_diagbot_replay_prints_old_and_new_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot replay RUN_ID` and `--since 7d` read the SQL audit store and print verdicts and changes."""
    url = asyncio.run(_sqlite_with_drafts(tmp_path / "audit.db"))
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("REDIS_URL", raising=False)
    version = load_rules().rule_set_version
    assert main(["replay", RUN]) == 0
    out = capsys.readouterr().out
    blocked = f"blocked (NUMBER_NOT_IN_EVIDENCE) under {version}"
    assert f"{RUN} initial: {blocked} -> {blocked}" in out
    assert main(["replay", "--since", "7d"]) == 0
    out = capsys.readouterr().out
    assert f"replayed 1 drafts of 1 runs under {version}: 0 changed" in out
    assert main(["replay", "run-none"]) == 1
    assert "no stored drafts for run run-none" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay"])


async def test_a_failing_archive_never_fails_the_release(caplog: pytest.LogCaptureFixture) -> None:
    """Keeping drafts is best effort: an audit store that raises leaves the decision as it was, with a warning."""

    class Broken(InMemoryAuditStore):
        async def record_draft(self, stored: StoredDraft) -> None:
            raise ConnectionError("down")

    store = InMemoryCanonicalStore()
    for record in run_records():
        await store.put(record)
    release = DiagnosisRelease(EvidenceGuard(store, load_rules()), ScriptedRepairer(), FixedJudge(), store, drafts=Broken())
    ctx = RunContext(run_id=RUN, session_key="T:C:1", query="why?", timeline=RunTimeline(RUN, InMemoryTimelineStore()))
    outcome = await release.release(ctx, DiagnosisDraft.model_validate(valid_draft()))
    assert outcome.outcome is Outcome.SUCCESS
    assert "checked draft not kept for replay (ConnectionError)" in caplog.text
