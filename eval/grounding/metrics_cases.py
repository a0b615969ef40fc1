"""Metrics cases of the grounding corpus (query_metrics series over the demo incident): honest claims in any unit
the series shows (a ratio as a percentage, seconds as ms or s, bytes in decimal or binary units, rates per second
or per minute; rose/peaked/averaged from first/last, max and mean; point times), and invented ones (values never
shown, unit and factor confusions, a raw counter read as a rate, a ratio written as a bare number, times outside
the window). Called by make_cases.py with its helpers."""

# ruff: noqa: E501  (case tables read best one case a line)
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from metrics_records import inline

SCOPE = "query_metrics series of the demo incident"


def add_cases(case: Callable[..., None], draft: Callable[..., dict[str, Any]]) -> None:
    """Append the metrics cases (case/draft are make_cases.py's helpers)."""
    extra = inline()

    def one(category: str, valid: bool, text: str, calls: list[str], note: str = "", kind: str = "NORMAL") -> None:
        records = [extra[c] for c in calls if c in extra]
        case(category, valid, draft((text, calls, kind), scope=SCOPE), note, extra=records or None)

    honest = [
        ("metrics-percent", "checkout-api's 5xx ratio rose from 0% at 22:30 to 57% at 23:30.", ["m_err"]),
        ("metrics-percent", "checkout-api's error ratio peaked at 86% at 23:14.", ["m_err"]),
        ("metrics-percent", "The checkout error ratio peaked at 86.2 %.", ["m_err"]),
        ("metrics-percent", "The checkout-api error ratio averaged 27% over the hour.", ["m_err"]),
        ("metrics-number", "The error ratio of checkout-api was 0.5714 at 23:30.", ["m_err"]),
        ("metrics-percent", "checkout-api answered 57.1% of requests with a 5xx at 23:30.", ["m_err"]),
        ("metrics-percent", "checkout-api's error ratio went from 0% at 23:00 to 18% at 23:01 and 59% at 23:02.", ["m_err_late"]),
        ("metrics-percent", "At 23:09 the checkout 5xx ratio was 67%.", ["m_err_late"]),
        ("metrics-percent", "order-service's HikariCP pool went from 20% used at 22:30 to 100% at 23:00.", ["m_pool"]),
        ("metrics-percent", "Pool usage reached 100% at 23:00 and stayed there until 23:30.", ["m_pool"]),
        ("metrics-percent", "Pool usage averaged 67% over the window.", ["m_pool"]),
        ("metrics-number", "Active connections rose from 4 at 22:30 to 20 at 23:00.", ["m_active"]),
        ("metrics-number", "The pool had 20 active connections from 23:00 on.", ["m_active"]),
        ("metrics-number", "Threads waiting for a connection peaked at 68 at 23:10.", ["m_pending"]),
        ("metrics-number", "60 threads were waiting at 23:30.", ["m_pending"]),
        ("metrics-number", "Waiting threads averaged 29.45.", ["m_pending"]),
        ("metrics-duration", "order-service p99 latency rose from 93 ms at 22:30 to 30 s.", ["m_p99"]),
        ("metrics-duration", "p99 latency reached 30.04 seconds at 23:02:30.", ["m_p99"]),
        ("metrics-duration", "p99 latency went from 0.093 s to 30039 ms.", ["m_p99"]),
        ("metrics-duration", "p99 latency averaged about 15 s.", ["m_p99"]),
        ("metrics-percent", "Database CPU went from 19% at 22:30 to 97% at 23:30.", ["m_cpu"]),
        ("metrics-percent", "Database CPU jumped to 93% at 22:58.", ["m_cpu"]),
        ("metrics-percent", "The shop-db host was 61% busy on average.", ["m_cpu"]),
        ("metrics-number", "Running threads on shop-db peaked at 29 at 23:09.", ["m_threads"]),
        ("metrics-counter", "The checkout-api counter for status 502 reached 338 by 23:30.", ["m_502_total"]),
        ("metrics-rate", "checkout-api's 5xx rate rose from 8.2 req/s at 22:30 to 42 req/s at 23:05.", ["x_rate"]),
        ("metrics-rate", "5xx errors peaked at 42 per second.", ["x_rate"]),
        ("metrics-rate", "At the peak that is 2,520 errors per minute.", ["x_rate"]),
        ("metrics-size", "Working set memory grew from 1.2 GB to 1.8 GB.", ["x_mem"]),
        ("metrics-size", "Memory peaked at 1.8 GB at 23:20.", ["x_mem"]),
        ("metrics-size", "Memory reached 1.68 GiB.", ["x_mem"]),
        ("metrics-size", "Memory started at 1200 MB at 22:30.", ["x_mem"]),
        ("metrics-time", "The pool was full (100%) by 23:00, two minutes after database CPU jumped at 22:58.", ["m_pool", "m_cpu"]),
        ("metrics-stat", "Active connections averaged 13.4 over the hour and peaked at 20.", ["m_active"]),
        ("metrics-stat", "The error ratio of checkout-api hit a maximum of 86 % and ended at 57 %.", ["m_err"]),
        ("metrics-stat", "Database CPU bottomed out at 18% before the batch job.", ["m_cpu"]),
    ]
    for category, text, calls in honest:
        one(category, True, text, calls)
    one("metrics-negative", True, "No error ratio series was returned for notification-service between 22:30 and 23:30.",
        ["m_none"], kind="NEGATIVE_OBSERVATION")

    invented = [
        ("metrics-percent", "checkout-api's 5xx ratio peaked at 91%.", ["m_err"], "never shown"),
        ("metrics-percent", "The checkout error ratio reached 14% at 23:05.", ["m_err"], "14% never shown"),
        ("metrics-percent", "checkout-api's error ratio rose to 75% at 23:30.", ["m_err"], "57%, not 75%"),
        ("metrics-percent", "The checkout error ratio averaged 35%.", ["m_err"], "mean 27%"),
        ("metrics-percent", "order-service's pool usage peaked at 110%.", ["m_pool"], "never shown"),
        ("metrics-percent", "Pool usage was 85% at 22:30.", ["m_pool"], "20% at 22:30; 85% never shown"),
        ("metrics-number", "Active connections rose to 25.", ["m_active"], "max 20"),
        ("metrics-number", "Threads waiting peaked at 75.", ["m_pending"], "max 68"),
        ("metrics-number", "Active connections averaged 16.", ["m_active"], "mean 13.4"),
        ("metrics-duration", "p99 latency rose to 45 s.", ["m_p99"], "never shown"),
        ("metrics-duration", "p99 latency was 930 ms at 22:30.", ["m_p99"], "93 ms: a factor of ten"),
        ("metrics-duration", "p99 latency was 30 ms.", ["m_p99"], "30 s, not 30 ms"),
        ("metrics-duration", "p99 latency averaged 20 s.", ["m_p99"], "mean 14.9 s"),
        ("metrics-percent", "Database CPU peaked at 99%.", ["m_cpu"], "max 97%"),
        ("metrics-percent", "Database CPU averaged 45%.", ["m_cpu"], "mean 61%"),
        ("metrics-percent", "The database ran at 29% CPU.", ["m_cpu"], "never shown"),
        ("metrics-number", "Running threads peaked at 35.", ["m_threads"], "max 29"),
        ("metrics-counter", "checkout-api served 338 requests per second with 502.", ["m_502_total"], "a raw counter is no rate"),
        ("metrics-counter", "checkout-api returned 338 502s per minute.", ["m_502_total"], "a raw counter is no rate"),
        ("metrics-counter", "checkout-api's request total grew at 41,520 per second.", ["x_total"], "a raw counter is no rate"),
        ("metrics-rate", "checkout-api's 5xx rate peaked at 48 req/s.", ["x_rate"], "max 42"),
        ("metrics-rate", "5xx errors ran at 8.2 per minute at 22:30.", ["x_rate"], "8.2 per second, not per minute"),
        ("metrics-rate", "5xx errors ran at 420 req/s.", ["x_rate"], "a factor of ten"),
        ("metrics-size", "Memory peaked at 2.1 GB.", ["x_mem"], "max 1.8 GB"),
        ("metrics-size", "Memory was 1.8 TB.", ["x_mem"], "GB, not TB"),
        ("metrics-size", "Memory peaked at 1.8 GiB.", ["x_mem"], "1.8 GB is 1.68 GiB, not 1.8 GiB"),
        ("metrics-size", "Each pod used 512 MB more after the deploy.", ["x_mem"], "never shown"),
        ("metrics-number", "The checkout error ratio was 57.", ["m_err"], "a ratio written as a bare number"),
        ("metrics-percent", "checkout-api's error ratio rose to 0.86%.", ["m_err"], "86%, not 0.86%"),
        ("metrics-number", "The pool saturated 30 times.", ["m_pool"], "30 only in times and the step"),
        ("metrics-time", "The pool filled up at 22:10.", ["m_pool"], "before the window"),
        ("metrics-time", "checkout errors started at 23:45.", ["m_err"], "after the window"),
        ("metrics-number", "3 of 5 services showed errors.", ["m_err_all"], "5 never shown"),
        ("metrics-stat", "checkout-api's error ratio peaked at 57%.", ["m_err"], "57% is the last value; the peak is 86%"),
        ("metrics-stat", "Active connections averaged 20.", ["m_active"], "20 is the max; the mean is 13.4"),
        ("metrics-stat", "Waiting threads peaked at 60.", ["m_pending"], "60 is the last value; the peak is 68"),
        ("metrics-stat", "Database CPU averaged 97%.", ["m_cpu"], "97% is the last value; the mean is 61%"),
        ("metrics-stat", "p99 latency bottomed out at 93 ms.", ["m_p99"], "93 ms is the first value; the min is 81 ms"),
    ]
    for category, text, calls, note in invented:
        one(category, False, text, calls, note)
    _sibling_units(case, draft)
    case("metrics-citation", False, draft(("checkout-api's error ratio was 0% throughout.", ["m_none"]), scope=SCOPE),
         "NORMAL citing NO_EVIDENCE", ["EVIDENCE_KIND_MISMATCH"])


CLOUDWATCH = {
    "run_id": "eval", "tool_call_id": "x_cloudwatch", "tool_name": "query_mysql",
    "arguments": {"sql": "SELECT ts, metric, value, unit FROM rds_metrics ORDER BY ts"},
    "effective_arguments": {"sql": "SELECT ts, metric, value, unit FROM rds_metrics ORDER BY ts"},
    "state": "READY", "evidence_status": "EVIDENCE_FOUND",
    "projection": {"tool_call_id": "x_cloudwatch", "tool_name": "query_mysql", "evidence_status": "EVIDENCE_FOUND",
                   "count": 5, "truncated": False, "error": None, "columns": ["ts", "metric", "value", "unit"],
                   "rows": [["2026-11-29 23:05:00", "CPUUtilization", 92.0, "Percent"],
                            ["2026-11-29 23:05:00", "ReadLatency", 0.0123, "Seconds"],
                            ["2026-11-29 23:05:00", "FreeableMemory", 1500000000, "Bytes"],
                            ["2026-11-29 23:05:00", "WriteIOPS", 42.0, "Count/Second"],
                            ["2026-11-29 23:05:00", "DatabaseConnections", 187, "Count"]]},
    "started_at": "2026-11-29T23:30:00Z",
}
CLOUDWATCH_DECIMAL = {
    "run_id": "eval", "tool_call_id": "x_cw_decimal", "tool_name": "query_mysql",
    "arguments": {"sql": "SELECT metric, value, unit FROM rds_metrics_decimal"},
    "effective_arguments": {"sql": "SELECT metric, value, unit FROM rds_metrics_decimal"},
    "state": "READY", "evidence_status": "EVIDENCE_FOUND",
    "projection": {"tool_call_id": "x_cw_decimal", "tool_name": "query_mysql", "evidence_status": "EVIDENCE_FOUND",
                   "count": 2, "truncated": False, "error": None, "columns": ["metric", "value", "unit"],
                   "rows": [["CPUUtilization", "92.50", "Percent"], ["ReadLatency", "0.0123", "Seconds"]]},
    "started_at": "2026-11-29T23:30:00Z",
}
CLOUDWATCH_LOG = {
    "run_id": "eval", "tool_call_id": "x_cw_log", "tool_name": "query_logs",
    "arguments": {"service": "shop-db", "query": "metric"},
    "effective_arguments": {"service": "shop-db", "query": "metric", "start": "2026-11-29T22:30:00Z",
                            "end": "2026-11-29T23:30:00Z", "limit": 20},
    "state": "READY", "evidence_status": "EVIDENCE_FOUND",
    "projection": {"tool_call_id": "x_cw_log", "tool_name": "query_logs", "evidence_status": "EVIDENCE_FOUND",
                   "count": 1, "truncated": False, "window_start": "2026-11-29T22:30:00Z",
                   "window_end": "2026-11-29T23:30:00Z",
                   "logs": [{"timestamp": "2026-11-29T23:06:00.000Z", "service": "shop-db", "level": "WARN",
                             "message": "metric alarm DiskQueueDepth breached",
                             "fields": {"metric": "ReplicaLag", "value": 95, "unit": "Milliseconds"}}]},
    "started_at": "2026-11-29T23:30:00Z",
}


def _sibling_units(case: Callable[..., None], draft: Callable[..., dict[str, Any]]) -> None:
    """SQL rows and log fields that carry their unit in a sibling column (CloudWatch-style value + unit)."""
    scope = "the rds_metrics table and shop-db logs"
    for text, valid, note in [
        ("RDS CPU utilisation was 92% at 23:05.", True, "value 92.0 beside unit Percent"),
        ("Read latency was 12.3 ms at 23:05.", True, "0.0123 Seconds"),
        ("Freeable memory was down to 1.5 GB.", True, "1500000000 Bytes"),
        ("The database wrote 42 IOPS per second.", True, "42 Count/Second"),
        ("187 connections were open at 23:05.", True, "a Count is a plain number"),
        ("RDS CPU utilisation was 95% at 23:05.", False, "92%, not 95%"),
        ("Read latency was 123 ms.", False, "12.3 ms, a factor of ten"),
        ("Freeable memory was 15 GB.", False, "1.5 GB"),
        ("Connections grew at 187 per second.", False, "a Count is no rate"),
    ]:
        case("sibling-unit", valid, draft((text, ["x_cloudwatch"]), scope=scope), note, extra=[CLOUDWATCH])
    for text, valid, note in [("RDS CPU utilisation was 92.5% then.", True, "DECIMAL '92.50' beside unit Percent"),
                              ("Read latency was 12.3 ms then.", True, "DECIMAL '0.0123' beside unit Seconds"),
                              ("RDS CPU utilisation was 95% then.", False, "92.5%, not 95%"),
                              ("Read latency was 123 ms then.", False, "12.3 ms, a factor of ten")]:
        case("sibling-unit", valid, draft((text, ["x_cw_decimal"]), scope=scope), note, extra=[CLOUDWATCH_DECIMAL])
    for text, valid, note in [("Replica lag reached 95 ms at 23:06.", True, "value 95 beside unit Milliseconds"),
                              ("Replica lag reached 95 s.", False, "95 ms, not 95 s")]:
        case("sibling-unit", valid, draft((text, ["x_cw_log"]), scope=scope), note, extra=[CLOUDWATCH_LOG])
