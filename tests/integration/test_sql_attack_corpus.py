"""The hostile-statement corpus (tests/corpus/sql_attacks.jsonl) and the analyst questions (tests/corpus/sql_analyst.txt)
through the real ToolBoundary against SQLite, MariaDB and PostgreSQL with privileged accounts (the worst case a careless
install gives us, so DIAG_SQL_ALLOW_PRIVILEGED is on): nothing changes, nothing is created, the canary session
survives, every hostile answer is an ERROR with a reason, no call exceeds the statement timeout + 1 s, and the process
grows by at most 64 MiB. Each test owns a uniquely named database."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.contracts.run import Budgets
from core.evidence.boundary import ToolBoundary
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from core.tools.sql.tool import SqlTool
from testkit.tool_names import ToolName
from tests.integration import sql_live
from tests.integration.sql_live import Live

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
ATTACKS = [json.loads(line) for line in (CORPUS / "sql_attacks.jsonl").read_text().splitlines() if line.strip()]
ANALYST = [line for line in (CORPUS / "sql_analyst.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
TIMEOUT_S = 1.0
ROW_CAP = 50
CONCURRENCY = 6
MAX_GROWTH = 64 * 1024 * 1024
NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
REASONED = {"SQL_REFUSED", "SQL_SYNTAX", "SQL_UNSUPPORTED", "SQL_TIMEOUT", "SQL_TOO_LARGE", "SQL_ERROR", "INVALID_ARGUMENTS"}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb),
                        pytest.param("postgres", marks=pytest.mark.postgres)])
async def live(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Live]:
    factory = {"sqlite": sql_live.sqlite_live, "mariadb": sql_live.mariadb_live, "postgres": sql_live.postgres_live}
    async with factory[request.param](tmp_path) as db:
        yield db


async def _snapshot(live: Live) -> dict[str, Any]:
    if live.name == "sqlite":
        return sql_live.sqlite_snapshot(live)
    if live.name == "mariadb":
        return await sql_live.mariadb_snapshot(live)
    return await sql_live.postgres_snapshot(live)


async def _canary_alive(live: Live) -> bool:
    if live.name == "mariadb":
        return await sql_live.mariadb_canary_alive(live)
    if live.name == "postgres":
        return await sql_live.postgres_canary_alive(live)
    return True


def _boundary(live: Live) -> ToolBoundary:
    tool = SqlTool(live.url, timeout_s=TIMEOUT_S, row_cap=ROW_CAP, clock=lambda: NOW, allow_privileged=True)
    return ToolBoundary({ToolName.QUERY_MYSQL: tool}, InMemoryCanonicalStore(), InMemoryAuditStore())


async def _call(boundary: ToolBoundary, sql: str) -> tuple[dict[str, Any], float]:
    run_id = f"run_{uuid.uuid4().hex[:8]}"
    ctx = RunContext(run_id=run_id, session_key="T:C:1", query="q", timeline=RunTimeline(run_id, InMemoryTimelineStore()),
                     budgets=Budgets(tool_timeout_s=TIMEOUT_S + 10))
    t0 = time.monotonic()
    projection = await boundary.invoke(ctx, "call_1", "query_mysql", {"sql": sql})
    return projection, time.monotonic() - t0


async def _run_all(boundary: ToolBoundary, statements: list[str]) -> list[tuple[dict[str, Any], float]]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(sql: str) -> tuple[dict[str, Any], float]:
        async with gate:
            return await _call(boundary, sql)

    return list(await asyncio.gather(*(one(s) for s in statements)))


def _problem(entry: dict[str, Any], projection: dict[str, Any], seconds: float) -> str | None:
    status, error = projection["evidence_status"], projection.get("error") or {}
    if seconds > TIMEOUT_S + 1.0:
        return f"took {seconds:.2f} s"
    if entry["expect"] == "error":
        if status != "ERROR" or error.get("code") not in REASONED or len(error.get("message", "")) < 10:
            return f"answered {status} {error.get('code')} instead of an ERROR with a reason"
    elif entry["expect"] == "capped":
        # The server returns at most cap+1 rows whatever LIMIT/FETCH the text carries; a backend that lacks the
        # syntax (LIMIT ALL inside a subquery on SQLite) may reject it instead.
        if status == "EVIDENCE_FOUND" and projection["count"] != ROW_CAP:
            return f"answered {projection['count']} rows instead of the cap of {ROW_CAP}"
        if status != "EVIDENCE_FOUND" and error.get("code") not in ("SQL_ERROR", "SQL_UNSUPPORTED", "SQL_SYNTAX"):
            return f"answered {status} {error.get('code')}"
    elif status == "EVIDENCE_FOUND" and projection["count"] > ROW_CAP:
        return f"a bomb answered {projection['count']} rows"
    return None


async def test_hostile_corpus_changes_nothing_and_every_answer_is_an_error(live: Live) -> None:
    """The whole corpus: 0 rows changed, 0 objects/slots/files created, canary alive, ERRORs with reasons, bounded."""
    target = live.tmp / f"diag_evil_{uuid.uuid4().hex[:8]}"
    statements = [e["sql"].replace("{path}", str(target)).replace("{canary_pid}", str(live.canary_pid)) for e in ATTACKS]
    before = await _snapshot(live)
    boundary = _boundary(live)
    rss_before = _status_kib("VmRSS")
    _reset_peak()
    results = await _run_all(boundary, statements)
    growth = _status_kib("VmHWM") - rss_before
    problems = [f"[{e['family']}] {e['sql'][:90]!r}: {p}" for e, (proj, secs) in zip(ATTACKS, results, strict=True)
                if (p := _problem(e, proj, secs)) is not None]
    assert problems == [], "\n".join(problems[:40])
    assert await _snapshot(live) == before
    assert not any(p.exists() for p in (target, Path("/tmp/diag_evil_a")))
    assert await _canary_alive(live)
    assert growth <= MAX_GROWTH, f"process grew by {growth / 2**20:.1f} MiB"


def test_corpus_covers_every_family() -> None:
    """At least 300 hostile statements, and each family the issue names is present."""
    families = {e["family"] for e in ATTACKS}
    assert len(ATTACKS) >= 300
    assert families >= {"write", "ddl", "multi", "obfuscation", "pg_functions", "mariadb_functions", "sqlite_functions",
                        "catalogs", "limit_bypass", "bombs"}
    sql = "\n".join(e["sql"] for e in ATTACKS).lower()
    for name in ("query_to_xml_and_xmlschema", "pg_create_physical_replication_slot", "pg_stat_reset", "pg_terminate_backend",
                 "pg_reload_conf", "pg_backup_start", "pg_try_advisory", "lo_import", "pg_read_file", "dblink", "copy ",
                 "load_file", "sleep(", "benchmark(", "get_lock", "into outfile", "mysql.user", "pg_authid", "pg_stat_activity",
                 "processlist", "limit all", "fetch first", "randomblob", "printf("):
        assert name in sql, name


async def test_analyst_queries_answer_on_every_backend(live: Live) -> None:
    """At least 30 MySQL-dialect analyst questions answer (FOUND or NO_EVIDENCE, never ERROR) on each backend."""
    assert len(ANALYST) >= 30
    boundary = _boundary(live)
    results = await _run_all(boundary, ANALYST)
    errors = [f"{sql[:100]!r}: {proj.get('error')}" for sql, (proj, _) in zip(ANALYST, results, strict=True)
              if proj["evidence_status"] == "ERROR"]
    assert errors == [], "\n".join(errors)
