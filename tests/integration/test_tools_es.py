"""query_logs over Elasticsearch / OpenSearch, against a local fake ES that really evaluates the query DSL sent."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
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
from core.tools.logs.elasticsearch import ElasticsearchLogsTool, build_search, split_terms
from core.tools.logs.jsonl import LogsTool
from core.tools.logs.loki import LokiLogsTool
from core.tools.logs.spec import LogsProjection
from testkit.tool_names import ToolName
from testkit.tools import backends_for
from tests.fakes.es_server import FakeElasticsearch, Fault, es_error, evaluate

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
API_KEY = "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="
PASSWORD = "hunter2pw"
INDEX = "logs-2026.11.29"
FIELDS = {"service": "service", "level": "level", "message": "message", "timestamp": "@timestamp"}
# Every key the generated DSL may contain; user text must only ever appear as a value.
DSL_KEYS = {
    "query", "bool", "filter", "must", "should", "minimum_should_match", "term", "range", "match", "match_phrase",
    "value", "case_insensitive", "gte", "lte", "format", "operator", "sort", "order", "unmapped_type", "_doc",
    "size", "track_total_hits", *FIELDS.values(),
}


def _doc(ts: str, service: str, level: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"@timestamp": ts, "service": service, "level": level, "message": message, **extra}


@pytest.fixture
async def es() -> AsyncIterator[FakeElasticsearch]:
    """A fake ES with order-service and payment-service documents around the default window (22:30-23:30)."""
    server = FakeElasticsearch()
    for minute in reversed(range(5, 30)):  # 25 pool errors, indexed newest first: the search must sort them
        server.add(INDEX, _doc(f"2026-11-29T23:{minute:02d}:00Z", "order-service", "error",
                               f"HikariPool-1 - Connection is not available #{minute}", trace_id=f"t{minute}",
                               stack="x" * 500, kubernetes={"pod": "order-1"}))
    server.add(INDEX, _doc("2026-11-29T22:00:00Z", "order-service", "error",
                           "HikariPool-1 - Connection is not available (too old)"))
    server.add(INDEX, _doc("2026-11-29T23:01:00Z", "order-service", "WARNING", "Connection pool nearly full"))
    server.add(INDEX, _doc("2026-11-29T23:02:00Z", "order-service", "warn", "connection pool at 90%"))
    server.add(INDEX, _doc("2026-11-29T23:03:00Z", "order-service", "info", "connection is fine, not available? no: available"))
    server.add(INDEX, _doc("2026-11-29T23:04:00Z", "payment-service", "error", "HikariPool-1 - Connection is not available"))
    server.add("metrics-2026.11.29", _doc("2026-11-29T23:06:00Z", "order-service", "error", "Connection is not available"))
    async with server:
        yield server


def _tool(server: FakeElasticsearch, url: str | None = None, **kwargs: Any) -> ElasticsearchLogsTool:
    return ElasticsearchLogsTool(url or server.url, lambda: NOW, **kwargs)


async def _run(server: FakeElasticsearch, url: str | None = None, tool_kwargs: dict[str, Any] | None = None,
               **args: Any) -> RawResult:
    tool = _tool(server, url, **(tool_kwargs or {}))
    try:
        return await tool.run(LogsArgs(**args))
    finally:
        await tool.aclose()


async def _failure(server: FakeElasticsearch, url: str | None = None, tool_kwargs: dict[str, Any] | None = None,
                   **args: Any) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        await _run(server, url, tool_kwargs, **args)
    return caught.value


def _keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(node=value)
    elif isinstance(node, list):
        for value in node:
            yield from _keys(value)


async def test_found_documents_are_chronological_and_total_is_exact_beyond_the_limit(es: FakeElasticsearch) -> None:
    """The earliest `limit` matches come back oldest first; total_count is hits.total (all 25 in the window)."""
    result = await _run(es, service="Order-Service", query="hikaripool AVAILABLE", limit=5)
    assert result.total_count == 25
    assert [item["timestamp"] for item in result.items] == [f"2026-11-29T23:0{m}:00Z" for m in range(5, 10)]
    first = result.items[0]
    assert first["service"] == "order-service"
    assert first["level"] == "ERROR"
    assert first["message"] == "HikariPool-1 - Connection is not available #5"
    assert first["trace_id"] == "t5"
    assert first["kubernetes.pod"] == "order-1"  # short nested fields are kept, dotted
    assert "stack" not in first  # long fields are not
    assert "@timestamp" not in first
    assert result.effective_arguments == {
        "service": "Order-Service", "query": "hikaripool AVAILABLE", "level": None,
        "start": "2026-11-29T22:30:00Z", "end": "2026-11-29T23:30:00Z", "limit": 5,
    }
    assert result.notes["total_count_exact"] is True
    assert result.notes["backend"] == "elasticsearch"
    assert "token-based" in result.notes["match_scope"]
    (request,) = es.requests
    assert (request.method, request.path) == ("POST", "/logs-*/_search")  # metrics-* is not searched
    assert request.body["size"] == 5
    assert request.body["track_total_hits"] is True
    assert request.body["sort"][0]["@timestamp"]["order"] == "asc"
    assert request.body["query"]["bool"]["filter"][1] == {"range": {"@timestamp": {
        "gte": "2026-11-29T22:30:00Z", "lte": "2026-11-29T23:30:00Z", "format": "strict_date_optional_time"}}}
    assert request.headers["Content-Type"] == "application/json"
    assert "Authorization" not in request.headers


async def test_unmatched_query_is_no_evidence(es: FakeElasticsearch) -> None:
    """A query that matches nothing returns no items and a zero total (the exact count, not a failure)."""
    result = await _run(es, service="order-service", query="deadlock")
    assert (result.items, result.total_count, result.notes["total_count_exact"]) == ([], 0, True)


async def test_window_bounds_are_inclusive_like_the_other_backends(es: FakeElasticsearch) -> None:
    """A document exactly at start or at end is inside the window; one a second later is not."""
    for ts in ("2026-11-29T23:00:00Z", "2026-11-29T23:10:00Z", "2026-11-29T23:10:01Z"):
        es.add(INDEX, _doc(ts, "edge", "info", f"boundary at {ts}"))
    result = await _run(es, service="edge", query="boundary", start="2026-11-29T23:00:00Z", end="2026-11-29T23:10:00Z")
    assert [i["timestamp"] for i in result.items] == ["2026-11-29T23:00:00Z", "2026-11-29T23:10:00Z"]


async def test_service_is_exact_but_ignores_case(es: FakeElasticsearch) -> None:
    """'order' alone matches no document (a term, not a text match); 'PAYMENT-SERVICE' finds payment-service."""
    assert (await _run(es, service="order", query="available")).total_count == 0
    result = await _run(es, service="PAYMENT-SERVICE", query="available")
    assert [i["service"] for i in result.items] == ["payment-service"]


async def test_level_filter_matches_common_spellings(es: FakeElasticsearch) -> None:
    """level=WARN keeps documents levelled 'WARNING' and 'warn' (reported as WARN) and nothing else."""
    result = await _run(es, service="order-service", query="connection pool", level="WARN")
    assert [(i["level"], i["message"]) for i in result.items] == [
        ("WARN", "Connection pool nearly full"), ("WARN", "connection pool at 90%")]
    assert result.total_count == 2
    assert result.effective_arguments["level"] == "WARN"
    level_clause = es.requests[0].body["query"]["bool"]["filter"][2]["bool"]
    assert {c["term"]["level"]["value"] for c in level_clause["should"]} == {"warn", "warning"}
    assert all(c["term"]["level"]["case_insensitive"] is True for c in level_clause["should"])


async def test_quoted_phrase_needs_adjacent_words_keywords_do_not(es: FakeElasticsearch) -> None:
    """'"is not available"' needs the words together; the INFO line with the words apart matches only as keywords."""
    phrase = await _run(es, service="order-service", query='"is not available"', level="INFO")
    words = await _run(es, service="order-service", query="is not available", level="INFO")
    assert phrase.total_count == 0
    assert words.total_count == 1
    assert es.requests[0].body["query"]["bool"]["must"] == [{"match_phrase": {"message": {"query": "is not available"}}}]
    assert es.requests[1].body["query"]["bool"]["must"] == [
        {"match": {"message": {"query": "is not available", "operator": "and"}}}]
    both = await _run(es, service="order-service", query='hikaripool "not available" #7', level="ERROR")
    assert [i["trace_id"] for i in both.items] == ["t7"]


async def test_matching_is_token_based_not_substring(es: FakeElasticsearch) -> None:
    """ES matches whole words: 'pool' does not find 'HikariPool-1' (the folder backend would); the notes say so."""
    result = await _run(es, service="order-service", query="pool", level="ERROR")
    assert result.total_count == 0
    assert "not as substrings" in result.notes["match_scope"]


@pytest.mark.parametrize("hostile", [
    '" OR 1=1',
    r'a\"b\\c',
    "fail* now?",
    '{"query": {"match_all": {}}}',
    '"}}, "size": 10000, "x": {"',
    "tab\there",
])
async def test_hostile_text_is_plain_text_and_cannot_change_the_query(es: FakeElasticsearch, hostile: str) -> None:
    """Quotes, backslashes, wildcards, boolean syntax and JSON fragments only match themselves as words."""
    es.add(INDEX, _doc("2026-11-29T23:20:00Z", "edge", "error", f"before {hostile} after"))
    es.add(INDEX, _doc("2026-11-29T23:21:00Z", "edge", "error", "something else entirely"))
    es.add(INDEX, _doc("2026-11-29T23:22:00Z", "edge", "error", "or one query size match all x"))
    result = await _run(es, service="edge", query=hostile)
    assert [i["message"] for i in result.items] == [f"before {hostile} after"]
    (request,) = es.requests
    assert set(_keys(request.body)) <= DSL_KEYS
    assert request.body["size"] == 20
    assert "query_string" not in json.dumps(request.body)
    assert {next(iter(clause)) for clause in request.body["query"]["bool"]["must"]} <= {"match", "match_phrase"}


async def test_hostile_service_name_selects_nothing_rather_than_everything(es: FakeElasticsearch) -> None:
    """A service such as `*`, `order-service OR payment-service` or a JSON fragment is a literal name."""
    for service in ("*", "order-service OR payment-service", '"}}, {"match_all": {}'):
        result = await _run(es, service=service, query="available")
        assert result.total_count == 0
    assert all(r.body["query"]["bool"]["filter"][0]["term"]["service"]["value"] in
               ("*", "order-service OR payment-service", '"}}, {"match_all": {}') for r in es.requests)


async def test_punctuation_only_query_is_refused_and_punctuation_terms_are_noted(es: FakeElasticsearch) -> None:
    """`*` has no word for ES to match: INVALID_ARGUMENTS, nothing sent; next to words it is dropped and listed."""
    failure = await _failure(es, service="order-service", query="* ==")
    assert failure.code == "INVALID_ARGUMENTS"
    assert es.requests == []
    result = await _run(es, service="order-service", query="hikaripool * available", limit=1)
    assert result.total_count == 25
    assert result.notes["unsearchable_terms"] == ["*"]


def test_generated_dsl_keeps_user_text_in_json_values() -> None:
    """The exact body for hostile text: each piece of it is a JSON string value; the fake evaluates it literally."""
    words, phrases = split_terms('x"} \\ "a \\" b" X')
    assert (words, phrases) == (['x"}', "\\", 'b"', "x"], ["a \\"])
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 0, 0, 500, tzinfo=UTC)
    fields = {"service": "svc", "level": "lvl", "message": "msg", "timestamp": "ts"}
    body = build_search('a"b', ["x\"}"], ['c "d'], "ERROR", start, end, 3, fields)
    assert body["query"]["bool"]["filter"][0] == {"term": {"svc": {"value": 'a"b', "case_insensitive": True}}}
    assert body["query"]["bool"]["filter"][1]["range"]["ts"]["lte"] == "2026-01-01T00:00:00.000500Z"
    assert body["query"]["bool"]["must"] == [
        {"match": {"msg": {"query": 'x"}', "operator": "and"}}}, {"match_phrase": {"msg": {"query": 'c "d'}}}]
    assert json.loads(json.dumps(body)) == body
    doc = {"svc": "A\"B", "lvl": "CRIT", "msg": 'x"} and c "d', "ts": "2026-01-01T00:00:00Z"}
    assert evaluate(body["query"], doc)
    assert not evaluate(body["query"], {**doc, "msg": "x and d c"})


async def test_api_key_and_url_credentials(es: FakeElasticsearch) -> None:
    """DIAG_ES_API_KEY is sent as `ApiKey`; without it, URL user:password is basic auth; the key wins over the URL."""
    url = es.url.replace("http://", f"http://elastic:{PASSWORD}@")
    await _run(es, tool_kwargs={"api_key": SecretStr(API_KEY)}, service="order-service", query="x")
    await _run(es, url=url, service="order-service", query="x")
    await _run(es, url=url, tool_kwargs={"api_key": SecretStr(API_KEY)}, service="order-service", query="x")
    basic = "Basic " + base64.b64encode(f"elastic:{PASSWORD}".encode()).decode()
    assert [r.headers["Authorization"] for r in es.requests] == [f"ApiKey {API_KEY}", basic, f"ApiKey {API_KEY}"]


@pytest.mark.parametrize(("fault", "code", "expected"), [
    (Fault(status=500, body=f"internal error key={API_KEY}"), "BACKEND_UNAVAILABLE", "HTTP 500"),
    (Fault(status=503), "BACKEND_UNAVAILABLE", "HTTP 503"),
    (Fault(status=429, body=es_error(429, "es_rejected_execution_exception", "rejected execution")),
     "BACKEND_UNAVAILABLE", "HTTP 429"),
    (Fault(status=400, body=es_error(400, "search_phase_execution_exception",
                                     "all shards failed " + "y" * 400 + f" {API_KEY} {PASSWORD}")),
     "ES_BAD_QUERY", "search_phase_execution_exception: all shards failed"),
    (Fault(status=401, body=es_error(401, "security_exception", "missing authentication credentials")),
     "ES_UNAUTHORIZED", "HTTP 401"),
    (Fault(status=403), "ES_UNAUTHORIZED", "HTTP 403"),
    (Fault(status=404, body=es_error(404, "index_not_found_exception", "no such index [logs-x]")),
     "ES_INDEX_MISSING", "no such index [logs-x]"),
    (Fault(delay_s=1.0), "BACKEND_UNAVAILABLE", "within 0.2 s"),
])
async def test_faults_become_clear_failures_without_secrets(es: FakeElasticsearch, fault: Fault, code: str,
                                                            expected: str) -> None:
    """Each backend fault is a ToolFailure with its code; the message holds no API key, password or URL."""
    es.fault = fault
    url = es.url.replace("http://", f"http://elastic:{PASSWORD}@")
    failure = await _failure(es, url=url, tool_kwargs={"timeout_s": 0.2, "api_key": SecretStr(API_KEY)},
                             service="order-service", query="available")
    assert failure.code == code
    assert expected in failure.message
    for secret in (API_KEY, PASSWORD, "127.0.0.1", "elastic:", es.url):
        assert secret not in failure.message
    assert len(failure.message) < 350


async def test_bad_query_reason_is_redacted_and_shortened(es: FakeElasticsearch) -> None:
    """A 400 whose reason echoes the API key or the URL password has them removed; a long reason is cut."""
    es.fault = Fault(status=400, body=es_error(400, "parsing_exception", f"bad {API_KEY} {PASSWORD} " + "z" * 400))
    url = es.url.replace("http://", f"http://elastic:{PASSWORD}@")
    failure = await _failure(es, url=url, tool_kwargs={"api_key": SecretStr(API_KEY)}, service="order-service", query="x")
    assert failure.code == "ES_BAD_QUERY"
    assert API_KEY not in failure.message
    assert PASSWORD not in failure.message
    assert failure.message.count("[REDACTED]") == 2
    assert failure.message.endswith("…")


async def test_missing_concrete_index_and_empty_pattern(es: FakeElasticsearch) -> None:
    """A missing concrete index is ES_INDEX_MISSING (the fake's real 404); a pattern matching no index is NO_EVIDENCE."""
    failure = await _failure(es, tool_kwargs={"index": "app-logs"}, service="order-service", query="available")
    assert failure.code == "ES_INDEX_MISSING"
    assert "app-logs" in failure.message
    result = await _run(es, tool_kwargs={"index": "nomatch-*"}, service="order-service", query="available")
    assert result.total_count == 0
    both = await _run(es, tool_kwargs={"index": "logs-*,metrics-*"}, service="order-service", query="available",
                      level="ERROR", start="2026-11-29T23:06:00Z", end="2026-11-29T23:06:00.5Z")
    assert both.total_count == 2


async def test_unreachable_es_is_backend_unavailable(es: FakeElasticsearch) -> None:
    """Nothing listening: BACKEND_UNAVAILABLE, and the message names neither host nor credentials."""
    await es.__aexit__(None, None, None)
    failure = await _failure(es, url=es.url.replace("http://", f"http://elastic:{PASSWORD}@"),
                             service="order-service", query="available")
    assert failure.code == "BACKEND_UNAVAILABLE"
    assert PASSWORD not in failure.message
    assert "127.0.0.1" not in failure.message


@pytest.mark.parametrize("body", ["<html>please log in</html>", {"hits": {"hits": "nope"}},
                                  {"hits": {"hits": [{"_id": "1"}], "total": {"value": 1}}}])
async def test_answer_that_is_not_es_json_is_a_bad_response(es: FakeElasticsearch, body: str | dict[str, Any]) -> None:
    """A 200 that is not ES's search JSON (a proxy's login page, odd shapes) is ES_BAD_RESPONSE, never evidence."""
    es.fault = Fault(status=200, body=body)
    failure = await _failure(es, service="order-service", query="available")
    assert failure.code == "ES_BAD_RESPONSE"


async def test_shard_failures_are_not_silent(es: FakeElasticsearch) -> None:
    """Failed shards with no hits is not NO_EVIDENCE (BACKEND_UNAVAILABLE); with hits, the items stand, total inexact."""
    start = datetime(2026, 11, 29, 22, 30, tzinfo=UTC)
    answer = es.search("logs-*", build_search("order-service", ["available"], [], "ERROR", start, NOW, 2, FIELDS))
    answer["_shards"]["failed"] = 1
    es.fault = Fault(status=200, body=answer)
    result = await _run(es, service="order-service", query="available", level="ERROR", limit=2)
    assert len(result.items) == 2
    assert result.notes["total_count_exact"] is False
    assert "partial" in result.notes
    answer["hits"]["hits"] = []
    answer["timed_out"] = True
    es.fault = Fault(status=200, body=answer)
    failure = await _failure(es, service="order-service", query="available")
    assert failure.code == "BACKEND_UNAVAILABLE"


async def test_wrong_base_path_is_backend_unavailable(es: FakeElasticsearch) -> None:
    """A URL whose path is not ES (a plain 404, not index_not_found) is BACKEND_UNAVAILABLE with the status."""
    failure = await _failure(es, url=es.url + "/not-es", service="order-service", query="available")
    assert failure.code == "BACKEND_UNAVAILABLE"
    assert "HTTP 404" in failure.message


async def test_ecs_style_nested_fields_and_timestamps_are_normalised(es: FakeElasticsearch) -> None:
    """Dotted field settings read nested (ECS) or flat documents; offsets, naive times and epoch millis become UTC 'Z'."""
    es.add("ecs-1", {"@timestamp": "2026-11-30T01:10:00.250+02:00", "service": {"name": "Checkout"},
                     "log": {"level": "ERR"}, "message": "disk full on node-3", "host": {"name": "n3"}})
    es.add("ecs-1", {"@timestamp": "2026-11-29T23:11:00", "service.name": "checkout", "log.level": "fatal",
                     "message": "disk full again"})
    es.add("ecs-1", {"@timestamp": int(datetime(2026, 11, 29, 23, 12, tzinfo=UTC).timestamp() * 1000),
                     "service": {"name": "checkout"}, "log": {"level": "critical"}, "message": "disk full, last"})
    kwargs = {"index": "ecs-*", "service_field": "service.name", "level_field": "log.level"}
    result = await _run(es, tool_kwargs=kwargs, service="checkout", query="disk full", level="ERROR")
    assert [(i["timestamp"], i["service"], i["level"]) for i in result.items] == [
        ("2026-11-29T23:10:00.250Z", "Checkout", "ERROR"),
        ("2026-11-29T23:11:00Z", "checkout", "ERROR"),
        ("2026-11-29T23:12:00Z", "checkout", "ERROR"),  # FATAL and CRITICAL are reported as ERROR
    ]
    assert result.items[0]["host.name"] == "n3"
    assert "log.level" not in result.items[0]


async def test_through_the_real_boundary_the_projection_is_valid(es: FakeElasticsearch) -> None:
    """Via ToolBoundary: a valid LogsProjection with the window, bounded items and the exact count; faults are ERROR."""
    tool = _tool(es, api_key=SecretStr(API_KEY))
    canonical = InMemoryCanonicalStore(300)
    boundary = ToolBoundary({ToolName.QUERY_LOGS: tool}, canonical, InMemoryAuditStore())
    timeline = RunTimeline("run-es", InMemoryTimelineStore())
    ctx = RunContext(run_id="run-es", session_key="T:C:1", query="why?", timeline=timeline, budgets=Budgets())
    try:
        projection = await boundary.invoke(ctx, "call_1", "query_logs",
                                           json.dumps({"service": "order-service", "query": "HikariPool", "limit": 50}))
        empty = await boundary.invoke(ctx, "call_2", "query_logs", {"service": "order-service", "query": "deadlock"})
        es.fault = Fault(status=401, body=es_error(401, "security_exception", f"unable to authenticate {API_KEY}"))
        failed = await boundary.invoke(ctx, "call_3", "query_logs", {"service": "order-service", "query": "HikariPool"})
    finally:
        await tool.aclose()
    parsed = LogsProjection.model_validate(projection)
    assert parsed.evidence_status == EvidenceStatus.EVIDENCE_FOUND
    assert parsed.count == 25
    assert parsed.window_start == "2026-11-29T22:30:00Z"
    assert parsed.logs[0].message == "HikariPool-1 - Connection is not available #5"
    assert parsed.logs[0].fields["trace_id"] == "t5"
    assert len(json.dumps(projection)) <= 8192
    assert LogsProjection.model_validate(empty).evidence_status == EvidenceStatus.NO_EVIDENCE
    assert failed["evidence_status"] == EvidenceStatus.ERROR
    assert failed["error"]["code"] == "ES_UNAUTHORIZED"
    assert API_KEY not in json.dumps(failed)


async def test_build_tools_picks_es_when_the_url_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """DIAG_ES_URL (and its index, field and key settings) selects ElasticsearchLogsTool; the key stays out of repr."""
    monkeypatch.setenv("DIAG_ES_URL", "https://es.internal:9200")
    monkeypatch.setenv("DIAG_ES_INDEX", "app-logs-*")
    monkeypatch.setenv("DIAG_ES_SERVICE_FIELD", "service.name")
    monkeypatch.setenv("DIAG_ES_API_KEY", API_KEY)
    monkeypatch.setenv("DIAG_ES_TIMEOUT_S", "3")
    settings = Settings()
    assert settings.diag_es_level_field == "level"
    assert settings.diag_es_timestamp_field == "@timestamp"
    assert API_KEY not in repr(settings)
    tool = (await backends_for(settings))[ToolName.QUERY_LOGS]
    assert isinstance(tool, ElasticsearchLogsTool)
    assert tool._index == "app-logs-*"
    assert tool._fields["service"] == "service.name"
    assert tool._headers["Authorization"] == f"ApiKey {API_KEY}"
    assert tool._http.timeout.total == 3
    monkeypatch.delenv("DIAG_ES_URL")
    assert isinstance((await backends_for(Settings()))[ToolName.QUERY_LOGS], LogsTool)
    monkeypatch.setenv("DIAG_LOKI_URL", "http://loki:3100")
    assert isinstance((await backends_for(Settings()))[ToolName.QUERY_LOGS], LokiLogsTool)


async def test_loki_and_es_both_set_is_refused_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two production log backends is a configuration error, named clearly, not a silent pick."""
    monkeypatch.setenv("DIAG_LOKI_URL", "http://loki:3100")
    monkeypatch.setenv("DIAG_ES_URL", f"http://elastic:{PASSWORD}@es:9200")
    with pytest.raises(ValueError, match="DIAG_LOKI_URL and DIAG_ES_URL") as caught:
        await backends_for(Settings())
    assert "unset one" in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_bad_configuration_fails_fast_without_echoing_secrets() -> None:
    """A URL that is not http(s), an index with forbidden characters or an empty field name is refused at construction."""
    with pytest.raises(ValueError, match="http") as caught:
        ElasticsearchLogsTool(f"es://elastic:{PASSWORD}@es:9200", lambda: NOW)
    assert PASSWORD not in str(caught.value)
    for index in ("logs/../_all", "", "logs-*,", "_all", "a b"):
        with pytest.raises(ValueError, match="DIAG_ES_INDEX"):
            ElasticsearchLogsTool("http://es:9200", lambda: NOW, index=index)
    remote = ElasticsearchLogsTool("http://es:9200/", lambda: NOW, index="eu:logs-*, logs-*")
    assert str(remote._search_url) == "http://es:9200/eu:logs-*,logs-*/_search"
    with pytest.raises(ValueError, match="MESSAGE_FIELD"):
        ElasticsearchLogsTool("http://es:9200", lambda: NOW, message_field=" ")


async def test_services_close_the_es_session(es: FakeElasticsearch, tmp_path: Path) -> None:
    """build_services wires ES from settings, a CLI-style call works, and Services.aclose closes its HTTP session."""
    settings = Settings(diag_es_url=es.url, diag_clock=NOW, database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db")
    services = await build_services(settings)
    try:
        ctx = RunContext(run_id="run-cli", session_key="cli", query="q", timeline=services.timeline_for("run-cli"),
                         budgets=Budgets())
        arguments = {"service": "order-service", "query": '"pool nearly"'}
        projection = await services.boundary.invoke(ctx, None, "query_logs", arguments)
        tool = getattr(services.boundary.tools[ToolName.QUERY_LOGS], "backend", None)
        assert isinstance(tool, ElasticsearchLogsTool)
        session = tool._http.current
        assert session is not None
    finally:
        await services.aclose()
    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    assert projection["count"] == 1
    assert session.closed


async def test_star_alone_matches_every_document_of_the_level(es: FakeElasticsearch) -> None:
    """`*` alone sends no message clause (filters only); `* ==` is still refused (see above)."""
    result = await _run(es, service="order-service", query="*", level="ERROR", limit=5)
    assert result.total_count >= 25
    assert es.requests[-1].body["query"]["bool"]["must"] == []
