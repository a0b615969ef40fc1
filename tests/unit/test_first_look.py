"""The first look's deterministic parts: which services and window a question names, which phrase stands for the
most frequent message, which tables record changes."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.run import RunContext
from core.service.timeline import RunTimeline
from core.steps.first_look import FIRST_LOOK_NEXT, FirstLook, services_in, starting_messages, window_in
from core.stores.memory import InMemoryTimelineStore
from core.tools.contract import PlannedCall
from core.tools.logs.first_look import logs_first_look, most_frequent_phrase
from core.tools.sql.first_look import change_tables, sql_first_look

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


@pytest.mark.parametrize(("question", "services"), [
    ("why is order-service failing since 23:00?", ("order-service",)),
    ("checkout-api 500s, and payment-service timeouts?", ("checkout-api", "payment-service")),
    ("alert HighErrorRate service=billing firing", ("billing",)),
    ("is the follow-up on the read-only replica done?", ()),
    ("a, b-api, c-service, d-worker", ("b-api", "c-service")),
])
def test_services_named_in_a_question(question: str, services: tuple[str, ...]) -> None:
    """Labels first, then service-like hyphenated names; at most two; ordinary hyphenated words are not services."""
    assert services_in(question) == services


@pytest.mark.parametrize(("question", "start"), [
    ("why is order-service failing since 23:00?", datetime(2026, 11, 29, 23, 0, tzinfo=UTC)),
    ("errors since about 8", datetime(2026, 11, 29, 8, 0, tzinfo=UTC)),
    ("payment-service alerted around 21:05", datetime(2026, 11, 29, 20, 50, tzinfo=UTC)),
    ("checkout errors since noon", datetime(2026, 11, 29, 12, 0, tzinfo=UTC)),
    ("since 11pm", datetime(2026, 11, 29, 23, 0, tzinfo=UTC)),
    ("since 23:45", datetime(2026, 11, 28, 23, 45, tzinfo=UTC)),
    ("order-service at 5 replicas", None),
    ("why is it failing?", None),
])
def test_window_named_in_a_question(question: str, start: datetime | None) -> None:
    """'since' a time starts the window there (yesterday when that time is still to come); 'around' 15 minutes
    earlier; a bare number after 'at' is not a time."""
    assert window_in(question, NOW) == start


def test_the_most_frequent_message_gives_a_phrase_without_its_numbers() -> None:
    """The phrase is the longest stretch without digits of the most common message shape, so it matches every
    occurrence whatever its numbers."""
    lines = [{"message": f"HikariPool-1 - Connection is not available, request timed out after 30000ms (waiting={n})"}
             for n in (3, 7, 9)] + [{"message": "Slow query took 812ms"}]
    assert most_frequent_phrase({"logs": lines}) == "Connection is not available, request timed out after"
    assert most_frequent_phrase({"logs": [{"message": "ok 1"}]}) is None
    assert most_frequent_phrase(None) is None


def test_change_tables_are_found_by_name_and_only_plain_names_are_used() -> None:
    """deployments, changes, release_log... are change tables; odd names are never put into SQL."""
    rows = [["alerts"], ["deployments"], ["orders"], ["feature_changes"], ["x; DROP TABLE y"], ["releases"]]
    assert change_tables({"rows": rows}) == ["deployments", "feature_changes"]
    assert change_tables({"rows": []}) == []


def test_the_metrics_first_look_plans_one_bounded_ranking_per_named_service() -> None:
    from core.tools.metrics.args import MetricsArgs
    from core.tools.metrics.first_look import TOP_SERIES, metrics_first_look, moved_most_query, subquery_step
    from core.tools.metrics.promql import check_query
    from core.tools.metrics.toolset import MetricsToolset

    end = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
    assert MetricsToolset().first_look(None, end - timedelta(hours=1), end) == ()
    assert metrics_first_look("order-service", end - timedelta(seconds=30), end) == ()
    [call] = MetricsToolset().first_look("order-service", end - timedelta(minutes=30), end)
    args = MetricsArgs.model_validate(call.arguments)
    assert call.tool == "query_metrics"
    assert args.instant
    assert args.end == end
    checked = check_query(args.query)
    assert {s.matchers[0].value for s in checked.selectors} == {"order-service"}
    assert f"topk({TOP_SERIES}," in args.query
    assert "[1800s:30s] offset 1800s" in args.query
    for hours in (1, 6, 24):  # the longest window the first look reads is a day: still a bounded query
        check_query(moved_most_query('we"ird\\name', hours * 3600))
        assert hours * 3600 / subquery_step(hours * 3600) <= 60


def test_an_alerts_start_is_the_window() -> None:
    """The alert question's "firing since <moment> UTC" (core/alerts/question.py) opens the window 15 minutes
    earlier (the rule's `for:` time); the earliest of several alerts wins; a start over a day old is not a window."""
    from core.alerts.alertmanager import AlertGroup
    from core.alerts.question import alertmanager_question
    from tests import alert_payloads

    now = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
    text = "- alert: PoolSaturated, firing since 2026-11-29 23:02:00 UTC\n- alert: Errors, firing since " \
           "2026-11-29 23:10:00 UTC\n  labels: service=order-service"
    assert window_in(text, now) == datetime(2026, 11, 29, 22, 47, tzinfo=UTC)
    assert services_in(text) == ("order-service",)
    assert window_in("- alert: Old, firing since 2026-11-27 23:02:00 UTC", now) is None
    assert window_in("- alert: Later, firing since 2026-11-29 23:45:00 UTC", now) is None
    payload = alert_payloads.group(alert_payloads.alert())  # firing since 2026-12-01T21:00:00Z
    question = alertmanager_question(AlertGroup.model_validate(payload))
    assert window_in(question, datetime(2026, 12, 1, 21, 30, tzinfo=UTC)) == datetime(2026, 12, 1, 20, 45, tzinfo=UTC)
    assert services_in(question) == ("order-service",)


def test_the_ranking_reads_as_change_in_facts_and_words() -> None:
    """Fallback facts, progress and Show evidence say what a ranking value is: a ratio to the time before, or the
    window's level after zero before; the ranking's order is by how far each moved (from zero first)."""
    from core.contracts.evidence import EvidenceStatus
    from core.tools.metrics.first_look import moved_most_query, ranking_window
    from core.tools.metrics.spec import MetricsSpec
    from core.tools.metrics.words import series_sentence

    def item(metric: str, value: float, change: str = "ratio to before") -> dict[str, object]:
        return {"metric": "", "labels": {"change": change, "metric": metric, "service": "order-service"},
                "unit": "", "kind": "unknown", "last": {"t": "2026-11-29T23:30:00Z", "v": value}, "points": []}

    series = [item("hikaricp_connections_active", 2.86), item("hikaricp_connections_pending", 60.4),
              item("http_server_requests_error_ratio", 0.601, "from zero, window level")]
    arguments = {"query": moved_most_query("order-service", 1800), "instant": True}
    assert ranking_window(arguments) == 1800
    fact = MetricsSpec().fact(EvidenceStatus.EVIDENCE_FOUND, {"series": series, "count": 3}, arguments, frozenset())
    assert fact.text.startswith("Of the series that moved most against the 30 minutes before the window, the http "
                                "server requests error of order-service was 0.601 on average in the window, 0 "
                                "in the 30 minutes before")
    assert fact.lines[0] == ("the hikaricp connections pending of order-service was 60.4 times its level in the 30 "
                             "minutes before")
    assert series_sentence(series[0]) == ("the hikaricp connections active of order-service was 2.86 times its level "
                                          "before the window")
def test_the_starting_conversation_ends_with_a_turn_asking_for_the_next_step() -> None:
    """A conversation ending on tool results left a small model nothing to answer (it replied with an empty
    message); the first look hands the turn back explicitly, and leaves ERROR results out."""
    found = {"evidence_status": "EVIDENCE_FOUND", "items": [{"message": "pool exhausted"}]}
    failed = {"evidence_status": "ERROR", "error": {"code": "X"}}
    messages = starting_messages([("first_look_1", "query_logs", {"service": "a"}, found),
                                  ("first_look_2", "query_logs", {"service": "b"}, failed)])
    assert [m["role"] for m in messages] == ["assistant", "tool", "user"]
    assert [c["id"] for c in messages[0]["tool_calls"]] == ["first_look_1"]
    assert messages[-1]["content"] == FIRST_LOOK_NEXT
    assert starting_messages([("first_look_1", "query_logs", {}, failed)]) == []


@pytest.mark.parametrize("secret", [
    "sk_live_51HqJxKLmNoPqRsTuVwXyZ012345", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "xoxb-1234567890-0987654321-abcdefghij", "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "service=AKIAIOSFODNN7EXAMPLE",
])
def test_a_secret_pasted_in_a_question_is_no_service_name(secret: str) -> None:
    """A token someone pastes into a question is not taken for a service: as a query_logs argument it would be kept
    in the call's canonical record and the replay draft."""
    found = services_in(f"why is order-service failing with {secret} since 23:00?")
    assert found == ("order-service",)
    assert not any(name in secret.lower() or secret.lower() in name for name in found if name != "order-service")


def test_service_names_in_capitals_and_beside_non_ascii_text() -> None:
    assert services_in("Order-Service — Checkout-API fail (订单)") == ("order-service", "checkout-api")


class _Boundary:
    """A boundary double: answers each call after `delay(call_id)` seconds with a projection naming it."""

    def __init__(self, delays: dict[str, float] | None = None, cancel_after: str | None = None) -> None:
        self.delays = delays or {}
        self.cancel_after = cancel_after
        self.started: list[str] = []
        self.finished: list[str] = []

    async def invoke(self, ctx: RunContext, tool_call_id: str | None, name: str, arguments: str | dict[str, Any]
                     ) -> dict[str, Any]:
        assert tool_call_id is not None
        self.started.append(tool_call_id)
        await asyncio.sleep(self.delays.get(tool_call_id, 0.0))
        self.finished.append(tool_call_id)
        if tool_call_id == self.cancel_after:
            ctx.cancelled.set()
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        rows = [["deployments"], ["changes"], ["users"]] if args.get("sql") == "SHOW TABLES" else []
        logs = [{"message": "Connection is not available, request timed out after 30000ms"}] * 5
        return {"tool_call_id": tool_call_id, "evidence_status": "EVIDENCE_FOUND", "count": 9, "rows": rows,
                "logs": logs if name == "query_logs" else []}


def _planned(service: str | None, start: datetime, end: datetime) -> tuple[PlannedCall, ...]:
    return (PlannedCall("query_metrics", {"query": f"a{{service={service!r}}}"}),
            PlannedCall("query_metrics", {"query": f"b{{service={service!r}}}"}))


def _first_look(boundary: _Boundary, max_calls: int = 10) -> FirstLook:
    return FirstLook(boundary, [logs_first_look, sql_first_look], lambda: ["query_logs", "query_mysql", "query_metrics"],
                     lambda: NOW, contract=_planned, max_calls=max_calls)


def _ctx(question: str) -> RunContext:
    return RunContext(run_id="r", session_key="s", query=question, timeline=RunTimeline("r", InMemoryTimelineStore()))


async def test_calls_at_once_are_numbered_as_one_after_the_other_whichever_finishes_first() -> None:
    """ERROR and WARN, the change tables' SELECTs and the toolsets' calls run at once; the numbers are the ones a
    look running them in turn gives (recordings name first_look_N), and the calls come back in that order."""
    slow_first = {"first_look_1": 0.05, "first_look_5": 0.05, "first_look_7": 0.05}
    boundary = _Boundary(slow_first)
    calls = await _first_look(boundary).run(_ctx("why is order-service failing?"))
    assert [(call_id, tool) for call_id, tool, _, _ in calls] == [
        ("first_look_1", "query_logs"), ("first_look_2", "query_logs"), ("first_look_3", "query_logs"),
        ("first_look_4", "query_mysql"), ("first_look_5", "query_mysql"), ("first_look_6", "query_mysql"),
        ("first_look_7", "query_metrics"), ("first_look_8", "query_metrics")]
    assert [args.get("level") for _, _, args, _ in calls[:3]] == ["ERROR", "WARN", "ERROR"]
    assert [args["sql"] for _, _, args, _ in calls[3:6]] == [
        "SHOW TABLES", "SELECT * FROM deployments ORDER BY 1 DESC LIMIT 5", "SELECT * FROM changes ORDER BY 1 DESC LIMIT 5"]
    assert boundary.started == [f"first_look_{n}" for n in range(1, 9)]
    assert boundary.finished[:2] == ["first_look_2", "first_look_1"]  # at once: the quick one finished first


async def test_the_call_bound_and_a_cancel_hold_for_calls_at_once() -> None:
    bounded = _Boundary()
    calls = await _first_look(bounded, max_calls=5).run(_ctx("why is order-service failing?"))
    assert [call_id for call_id, *_ in calls] == [f"first_look_{n}" for n in range(1, 6)]
    assert bounded.started == [f"first_look_{n}" for n in range(1, 6)]
    cancelled = _Boundary(cancel_after="first_look_4")  # during SHOW TABLES: nothing after it starts
    calls = await _first_look(cancelled).run(_ctx("why is order-service failing?"))
    assert [call_id for call_id, *_ in calls] == [f"first_look_{n}" for n in range(1, 5)]
