"""query_logs over Grafana Loki, against a local fake Loki that really evaluates the LogQL the tool sends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from core.bootstrap import build_services
from core.contracts.evidence import EvidenceStatus, RawResult
from core.contracts.run import Budgets
from core.errors import ToolFailure
from core.evidence.boundary import ToolBoundary
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.settings import Settings
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from core.tools.logs.args import LogsArgs
from core.tools.logs.jsonl import LogsTool
from core.tools.logs.loki import LokiLogsTool, build_log_query
from core.tools.logs.spec import LogsProjection
from testkit.tool_names import ToolName
from testkit.tools import FakeTool, backends_for
from tests.fakes.loki_server import INSTANT, RANGE, FakeLoki, Fault, parse_log_query

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
TOKEN = "s3cr3t-loki-token"
PASSWORD = "hunter2pw"
ORDER = {"service": "order-service", "level": "error", "pod": "order-1"}


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts).timestamp()) * 1_000_000_000


@pytest.fixture
async def loki() -> AsyncIterator[FakeLoki]:
    """A fake Loki with order-service and payment-service streams around the default window (22:30-23:30)."""
    server = FakeLoki()
    for minute in range(5, 30):  # 25 pool errors in the window, one per minute from 23:05
        server.push(ORDER, _ns(f"2026-11-29T23:{minute:02d}:00+00:00"),
                    json.dumps({"msg": f"HikariPool-1 - Connection is not available #{minute}", "trace_id": f"t{minute}",
                                "stack": "x" * 500}))
    server.push(ORDER, _ns("2026-11-29T22:00:00+00:00"), "HikariPool-1 - Connection is not available (too old)")
    server.push({"service": "order-service", "level": "WARNING"}, _ns("2026-11-29T23:01:00+00:00"),
                "Connection pool nearly full")
    server.push({"service": "order-service", "level": "warn"}, _ns("2026-11-29T23:02:00+00:00"),
                "connection pool at 90%")
    server.push({"service": "order-service", "level": "info"}, _ns("2026-11-29T23:03:00+00:00"),
                "connection is fine, not available? no: available")
    server.push({"service": "payment-service", "level": "error"}, _ns("2026-11-29T23:04:00+00:00"),
                "HikariPool-1 - Connection is not available")
    async with server:
        yield server


def _tool(server: FakeLoki, url: str | None = None, **kwargs: Any) -> LokiLogsTool:
    return LokiLogsTool(url or server.url, lambda: NOW, **kwargs)


async def _run(server: FakeLoki, url: str | None = None, tool_kwargs: dict[str, Any] | None = None,
               **args: Any) -> RawResult:
    tool = _tool(server, url, **(tool_kwargs or {}))
    try:
        return await tool.run(LogsArgs(**args))
    finally:
        await tool.aclose()


async def _failure(server: FakeLoki, url: str | None = None, tool_kwargs: dict[str, Any] | None = None,
                   **args: Any) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        await _run(server, url, tool_kwargs, **args)
    return caught.value


async def test_found_lines_are_chronological_and_total_is_exact_beyond_the_limit(loki: FakeLoki) -> None:
    """The earliest `limit` matches come back oldest first across streams; total_count counts all 25 in the window."""
    result = await _run(loki, service="Order-Service", query="hikaripool AVAILABLE", limit=5)
    assert result.total_count == 25
    assert [item["timestamp"] for item in result.items] == [f"2026-11-29T23:0{m}:00Z" for m in range(5, 10)]
    first = result.items[0]
    assert first["service"] == "order-service"
    assert first["level"] == "ERROR"
    assert first["message"] == "HikariPool-1 - Connection is not available #5"
    assert first["trace_id"] == "t5"
    assert first["pod"] == "order-1"  # short stream labels are kept as fields
    assert "stack" not in first  # long fields are not
    assert result.effective_arguments == {
        "service": "Order-Service", "query": "hikaripool AVAILABLE", "level": None,
        "start": "2026-11-29T22:30:00Z", "end": "2026-11-29T23:30:00Z", "limit": 5,
    }
    assert result.notes["total_count_exact"] is True
    assert result.notes["backend"] == "loki"
    (ranged,) = [r for r in loki.requests if r.endpoint == RANGE]
    assert ranged.params["direction"] == "forward"
    assert ranged.params["limit"] == "5"
    assert ranged.params["start"] == str(_ns("2026-11-29T22:30:00+00:00"))


async def test_unmatched_query_is_no_evidence(loki: FakeLoki) -> None:
    """A query that matches nothing returns no items and a zero total (the exact count, not a failure)."""
    result = await _run(loki, service="order-service", query="deadlock")
    assert (result.items, result.total_count, result.notes["total_count_exact"]) == ([], 0, True)


async def test_other_service_and_old_lines_are_excluded(loki: FakeLoki) -> None:
    """The service label is matched exactly (ignoring case): 'order' alone matches no stream; old lines stay out."""
    assert (await _run(loki, service="order", query="available")).total_count == 0
    result = await _run(loki, service="payment-service", query="available")
    assert [i["service"] for i in result.items] == ["payment-service"]


async def test_level_filter_matches_common_spellings(loki: FakeLoki) -> None:
    """level=WARN keeps streams labelled 'WARNING' and 'warn' (reported as WARN) and nothing else."""
    result = await _run(loki, service="order-service", query="connection pool", level="WARN")
    assert [(i["level"], i["message"]) for i in result.items] == [
        ("WARN", "Connection pool nearly full"), ("WARN", "connection pool at 90%")]
    assert result.total_count == 2
    assert result.effective_arguments["level"] == "WARN"


async def test_quoted_phrase_matches_the_exact_phrase_only(loki: FakeLoki) -> None:
    """'"is not available"' needs the words together; the INFO line with the words apart does not match."""
    phrase = await _run(loki, service="order-service", query='"is not available"', level="INFO")
    words = await _run(loki, service="order-service", query="is not available", level="INFO")
    assert phrase.total_count == 0
    assert words.total_count == 1
    parsed = [r.parsed for r in loki.requests if r.endpoint == RANGE]
    assert parsed[0] is not None
    assert len(parsed[0].filters) == 1


@pytest.mark.parametrize("hostile", [
    '"} |= "x',
    r'a\"b\\c',
    ".*",
    "(?i)[a-z]+",
    'x"} or vector(1) #',
    "tab\there",
])
async def test_hostile_text_is_matched_literally_and_cannot_change_the_query(loki: FakeLoki, hostile: str) -> None:
    """Quotes, backslashes and regex syntax only ever match themselves: one selector matcher, one filter per term."""
    loki.push({"service": "edge", "level": "error"}, _ns("2026-11-29T23:20:00+00:00"), f"before {hostile} after")
    loki.push({"service": "edge", "level": "error"}, _ns("2026-11-29T23:21:00+00:00"), "something else entirely")
    result = await _run(loki, service="edge", query=f'"{hostile}"' if '"' not in hostile else hostile)
    assert result.total_count >= 1
    assert all(any(part.lower() in i["message"].lower() for part in hostile.replace('"', " ").split()) for i in result.items)
    assert "something else entirely" not in [i["message"] for i in result.items]
    for request in loki.requests:
        assert request.parsed is not None, request.params  # Loki parsed it: no syntax error, no injected stage
        assert [m[0] for m in request.parsed.matchers] == ["service"]
        assert all(op == "|~" for op, _ in request.parsed.filters)


async def test_hostile_service_name_selects_nothing_rather_than_everything(loki: FakeLoki) -> None:
    """A service such as `.*` or `x"}` is a literal name: no stream matches, and the query still parses."""
    for service in (".*", 'order-service"} |= "', "order-service|payment-service"):
        result = await _run(loki, service=service, query="available")
        assert result.total_count == 0
    assert all(r.parsed is not None for r in loki.requests)


def test_generated_logql_escapes_for_re2_and_the_string_literal() -> None:
    """The exact LogQL for a hostile phrase: RE2 escapes, then Go string escapes; it round-trips through the parser."""
    query = build_log_query("a.b", ['x"}\\'], "ERROR", "app", "severity")
    assert query == (
        '{app=~"(?i)a\\\\.b", severity=~"(?i)(?:error|err|fatal|critical|crit)"} |~ "(?i)x\\\\\\"\\\\}\\\\\\\\"'
    )
    parsed = parse_log_query(query)
    assert parsed.matchers[0] == ("app", "=~", "(?i)a\\.b")
    assert parsed.filters == (("|~", '(?i)x\\"\\}\\\\'),)


async def test_tenant_bearer_token_and_url_credentials(loki: FakeLoki) -> None:
    """X-Scope-OrgID and the bearer token go on both requests; without a token, URL user:password is basic auth."""
    await _run(loki, tool_kwargs={"tenant": "team-a", "token": SecretStr(TOKEN)}, service="order-service", query="x")
    assert {r.endpoint for r in loki.requests} == {RANGE, INSTANT}
    for request in loki.requests:
        assert request.headers["X-Scope-OrgID"] == "team-a"
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    loki.requests.clear()
    await _run(loki, url=loki.url.replace("http://", f"http://user:{PASSWORD}@"), service="order-service", query="x")
    assert all(r.headers["Authorization"].startswith("Basic ") for r in loki.requests)
    assert all("X-Scope-OrgID" not in r.headers for r in loki.requests)


@pytest.mark.parametrize(("fault", "code", "expected"), [
    (Fault(status=500, body=f"internal error token={TOKEN}"), "BACKEND_UNAVAILABLE", "HTTP 500"),
    (Fault(status=503), "BACKEND_UNAVAILABLE", "HTTP 503"),
    (Fault(status=400, body="parse error at line 1, col 9: syntax error: unexpected IDENTIFIER " + "y" * 400
           + f" {TOKEN} {PASSWORD}"), "LOKI_BAD_QUERY", "parse error at line 1, col 9"),
    (Fault(status=401, body="no org id"), "LOKI_UNAUTHORIZED", "HTTP 401"),
    (Fault(status=403), "LOKI_UNAUTHORIZED", "HTTP 403"),
    (Fault(delay_s=1.0), "BACKEND_UNAVAILABLE", "within 0.2 s"),
])
async def test_faults_become_clear_failures_without_secrets(loki: FakeLoki, fault: Fault, code: str, expected: str) -> None:
    """Each backend fault of the log query is a ToolFailure with its code; the message holds no token, password or URL."""
    loki.faults[RANGE] = fault
    url = loki.url.replace("http://", f"http://user:{PASSWORD}@")
    failure = await _failure(loki, url=url, tool_kwargs={"timeout_s": 0.2}, service="order-service", query="available")
    assert failure.code == code
    assert expected in failure.message
    for secret in (TOKEN, PASSWORD, "127.0.0.1", "user:"):
        assert secret not in failure.message
    assert len(failure.message) < 300


async def test_bad_query_message_is_redacted_and_shortened(loki: FakeLoki) -> None:
    """A 400 echoing the bearer token has it removed; Loki's long message is cut."""
    loki.faults[RANGE] = Fault(status=400, body=f"bad {TOKEN} " + "z" * 400)
    failure = await _failure(loki, tool_kwargs={"token": SecretStr(TOKEN)}, service="order-service", query="x")
    assert failure.code == "LOKI_BAD_QUERY"
    assert TOKEN not in failure.message
    assert "[REDACTED]" in failure.message
    assert failure.message.endswith("…")


async def test_unreachable_loki_is_backend_unavailable(loki: FakeLoki) -> None:
    """Nothing listening: BACKEND_UNAVAILABLE, and the message names neither host nor credentials."""
    await loki.__aexit__(None, None, None)
    failure = await _failure(loki, url=loki.url.replace("http://", f"http://user:{PASSWORD}@"),
                             service="order-service", query="available")
    assert failure.code == "BACKEND_UNAVAILABLE"
    assert PASSWORD not in failure.message
    assert "127.0.0.1" not in failure.message


async def test_count_failure_falls_back_to_the_items(loki: FakeLoki) -> None:
    """When only the count query fails, the lines are still evidence; the total is the items' count, marked inexact."""
    loki.faults[INSTANT] = Fault(status=500)
    result = await _run(loki, service="order-service", query="available", level="ERROR", limit=3)
    assert len(result.items) == 3
    assert result.total_count == 3
    assert result.notes["total_count_exact"] is False
    assert result.notes["total_count_error"] == "BACKEND_UNAVAILABLE"


async def test_answer_that_is_not_lokis_json_is_a_bad_response(loki: FakeLoki) -> None:
    """A 200 that is not Loki's JSON (a proxy's login page) is LOKI_BAD_RESPONSE, never evidence."""
    loki.faults[RANGE] = Fault(status=200, body="<html>please log in</html>")
    failure = await _failure(loki, service="order-service", query="available")
    assert failure.code == "LOKI_BAD_RESPONSE"


async def test_wrong_base_path_is_backend_unavailable(loki: FakeLoki) -> None:
    """A URL whose path is not Loki's API (404) is BACKEND_UNAVAILABLE with the status."""
    failure = await _failure(loki, url=loki.url + "/not-loki", service="order-service", query="available")
    assert failure.code == "BACKEND_UNAVAILABLE"
    assert "HTTP 404" in failure.message


async def test_through_the_real_boundary_the_projection_is_valid(loki: FakeLoki) -> None:
    """Via ToolBoundary: a valid LogsProjection with the window, bounded items and the exact count; faults are ERROR."""
    tool = _tool(loki, token=SecretStr(TOKEN))
    canonical = InMemoryCanonicalStore(300)
    boundary = ToolBoundary({ToolName.QUERY_LOGS: tool}, canonical, InMemoryAuditStore())
    timeline = RunTimeline("run-loki", InMemoryTimelineStore())
    ctx = RunContext(run_id="run-loki", session_key="T:C:1", query="why?", timeline=timeline, budgets=Budgets())
    try:
        projection = await boundary.invoke(ctx, "call_1", "query_logs",
                                           json.dumps({"service": "order-service", "query": "HikariPool", "limit": 50}))
        loki.faults[RANGE] = Fault(status=500)
        failed = await boundary.invoke(ctx, "call_2", "query_logs", {"service": "order-service", "query": "HikariPool"})
    finally:
        await tool.aclose()
    parsed = LogsProjection.model_validate(projection)
    assert parsed.evidence_status == EvidenceStatus.EVIDENCE_FOUND
    assert parsed.count == 25
    assert parsed.window_start == "2026-11-29T22:30:00Z"
    assert parsed.logs[0].message == "HikariPool-1 - Connection is not available #5"
    assert parsed.logs[0].fields["trace_id"] == "t5"
    assert len(json.dumps(projection)) <= 8192
    assert failed["evidence_status"] == EvidenceStatus.ERROR
    assert failed["error"]["code"] == "BACKEND_UNAVAILABLE"
    assert TOKEN not in json.dumps(failed)


async def test_build_tools_picks_loki_when_the_url_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """DIAG_LOKI_URL (and its label, tenant and token settings) select LokiLogsTool; without it the JSONL folder."""
    assert isinstance((await backends_for(Settings()))[ToolName.QUERY_LOGS], LogsTool)
    monkeypatch.setenv("DIAG_LOKI_URL", "http://loki:3100")
    monkeypatch.setenv("DIAG_LOKI_TENANT", "team-a")
    monkeypatch.setenv("DIAG_LOKI_TOKEN", TOKEN)
    monkeypatch.setenv("DIAG_LOKI_SERVICE_LABEL", "app")
    settings = Settings()
    assert settings.diag_loki_token is not None
    assert TOKEN not in repr(settings)
    tool = (await backends_for(settings))[ToolName.QUERY_LOGS]
    assert isinstance(tool, LokiLogsTool)
    assert tool._service_label == "app"


def test_bad_configuration_fails_fast_without_echoing_it() -> None:
    """A URL that is not http(s) or a label that is not a label name is refused at construction."""
    with pytest.raises(ValueError, match="http") as caught:
        LokiLogsTool(f"loki://user:{PASSWORD}@loki:3100", lambda: NOW)
    assert PASSWORD not in str(caught.value)
    with pytest.raises(ValueError, match="label"):
        LokiLogsTool("http://loki:3100", lambda: NOW, level_label='level"}')


async def test_services_close_the_loki_session(loki: FakeLoki, tmp_path: Path) -> None:
    """build_services wires Loki from settings, a CLI-style call works, and Services.aclose closes its HTTP session."""
    settings = Settings(diag_loki_url=loki.url, diag_clock=NOW, database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db")
    services = await build_services(settings)
    try:
        ctx = RunContext(run_id="run-cli", session_key="cli", query="q", timeline=services.timeline_for("run-cli"),
                         budgets=Budgets())
        arguments = {"service": "order-service", "query": '"pool nearly"'}
        projection = await services.boundary.invoke(ctx, None, "query_logs", arguments)
        tool = getattr(services.boundary.tools[ToolName.QUERY_LOGS], "backend", None)
        assert isinstance(tool, LokiLogsTool)
        session = tool._http.current
        assert session is not None
    finally:
        await services.aclose()
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    assert projection["count"] == 1
    assert session.closed


async def test_injected_tools_are_left_to_their_owner(tmp_path: Path) -> None:
    """Tools passed to build_services are not closed by it (only the ones it built)."""
    closed: list[str] = []

    class Closable(FakeTool):
        async def aclose(self) -> None:
            closed.append("x")

    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db")
    tool = Closable(ToolName.QUERY_LOGS, RawResult(total_count=0))
    services = await build_services(settings, tools={ToolName.QUERY_LOGS: tool})
    await services.aclose()
    assert closed == []


async def test_star_alone_is_the_stream_selector_without_line_filters(loki: FakeLoki) -> None:
    """`*` alone matches every line of the service and level: the LogQL query has no line filter, the count covers
    every ERROR line of the window (at least the 25 pool errors)."""
    result = await _run(loki, service="order-service", query="*", level="ERROR", limit=5)
    assert result.total_count >= 25
    assert len(result.items) == 5
    assert all(item["level"] == "ERROR" for item in result.items)
