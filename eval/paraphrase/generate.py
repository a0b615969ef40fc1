"""Generated grounding eval: honest paraphrases and near-miss inventions of the demo incident's quantities.

Run from the repo root: python eval/paraphrase/generate.py [--seed N] [--cases N] [--out DIR]
(prints the rates per class; with --out it also writes DIR/records.jsonl and DIR/cases.jsonl for `diagbot eval DIR`).

For every quantity of the demo incident's tool records (eval/grounding/records.jsonl, real canonical records) plus a
few records whose values carry their unit in a sibling field or a metric name, `FACTS` lists the forms an engineer
writes from it (other units, rounding words, bounds, number words, ranges, differences between two grounded times,
counts of listed items, the window and limit the call used, the statement that a query found nothing) and the
near misses a confabulating model writes instead (off by one, swapped units, recombined fragments of dates and
versions, roman numerals, other dates, versions never deployed, wrong rounding, the query text of an empty call as a
fact). Each form is put into a sentence and into one of the published fields (analysis, conclusion, action,
recommendation, limitations scope or missing info); the seed picks the sentences, fields and the sample, so two
seeds give two different samples of the same classes. CI (tests/unit/test_generated_grounding.py) keeps the floor on
seed 1: 100 % of inventions blocked, at most 1 % of honest forms refused; `make bench` runs seed 2
(bench/bench_grounding_eval.py).
"""

# ruff: noqa: E501  (the fact table reads best one form a line)
from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.contracts.evidence import CanonicalRecord  # noqa: E402
from core.guard.corpus import Case, CaseResult, run_case  # noqa: E402
from core.guard.rules import load_rules  # noqa: E402
from testkit.release import logs_record, sql_record  # noqa: E402

RECORDS = ROOT / "eval" / "grounding" / "records.jsonl"
FIELDS = ("analysis", "conclusion", "action", "recommendation", "scope", "missing_info")
NUMBER = "NUMBER_NOT_IN_EVIDENCE"


@dataclass(frozen=True)
class Fact:
    """One quantity of the evidence: the calls showing it, sentences to carry a form of it ({q} is the form), the
    honest forms and the invented near misses, each with its class."""

    calls: tuple[str, ...]
    sentences: tuple[str, ...]
    honest: tuple[tuple[str, str], ...]
    invented: tuple[tuple[str, str], ...]
    kind: str = "NORMAL"
    fields: tuple[str, ...] = FIELDS


POOL, LATE, WIDE, C502, C504 = ("c_pool",), ("c_pool_late",), ("c_window2h",), ("c_checkout502",), ("c_checkout504",)
DEPLOYS, STATS, BATCH, ALERTS = ("s_deploys",), ("s_pool",), ("s_batch",), ("s_alerts",)
UNITS, LOG_UNITS, SERIES = ("u_metrics",), ("u_logs",), ("u_series",)

FACTS: tuple[Fact, ...] = (
    # ---- a duration in free text (HikariPool: "request timed out after 30000ms") --------------------------------
    Fact(POOL, ("Requests waited {q} for a pool connection and then failed.", "HikariPool-1 gave up after {q}.",
                "The pool timeout of {q} was hit by every request shown."),
         (("duration-unit", "30 s"), ("duration-unit", "30 seconds"), ("duration-unit", "30-second timeout"),
          ("duration-unit", "30 sec"), ("duration-unit", "30,000 ms"), ("duration-unit", "30000 ms"),
          ("duration-unit", "0.5 minutes"), ("duration-unit", "half a minute"), ("duration-rounded", "about 30 s"),
          ("duration-rounded", "roughly 30 seconds")),
         (("duration-swapped-unit", "30000 s"), ("duration-swapped-unit", "30 ms"), ("duration-swapped-unit", "30 min"),
          ("duration-off", "31 s"), ("duration-off", "45 seconds"), ("duration-swapped-unit", "30 hours"),
          ("duration-rounded-wrong", "about 40 s"), ("duration-off", "300 ms"))),
    # ---- a latency field inside a message (latency_ms=30064) ----------------------------------------------------
    Fact(C502, ("checkout-api answered 502 after {q}.", "The upstream call to order-service took {q}."),
         (("duration-rounded", "just over 30 s"), ("duration-rounded", "about 30 seconds"), ("duration-unit", "30.06 s"),
          ("duration-rounded", "roughly 30 s"), ("duration-unit", "30,064 ms"), ("duration-rounded", "nearly half a minute")),
         (("duration-off", "just over 40 s"), ("duration-swapped-unit", "30064 s"), ("duration-off", "3 s"),
          ("duration-rounded-wrong", "about 20 seconds"))),
    # ---- "did not answer within 30s" ---------------------------------------------------------------------------
    Fact(C504, ("checkout-api gave up on order-service after {q}.",),
         (("duration-unit", "30 seconds"), ("duration-unit", "30000 ms"), ("duration-unit", "half a minute")),
         (("duration-off", "60 seconds"), ("duration-swapped-unit", "30 ms"))),
    # ---- counts --------------------------------------------------------------------------------------------------
    Fact(POOL, ("{q} ERROR lines matched on order-service.", "The pool timeout was logged {q} times.",
                "order-service logged {q} pool timeouts in the window."),
         (("count", "493"), ("count-rounded", "about 490"), ("count-rounded", "nearly 500"), ("count-rounded", "almost 500"),
          ("count-rounded", "roughly 500"), ("count-rounded", "just under 500"), ("count-bound", "more than 400"),
          ("count-bound", "over 450"), ("count-bound", "fewer than 500"), ("count-bound", "at least 490"),
          ("count-rounded", "~493")),
         (("count-off", "494"), ("count-off", "492"), ("count-rounded-wrong", "about 600"), ("count-bound-wrong", "more than 500"),
          ("count-bound-wrong", "fewer than 400"), ("count-fragment", "338"), ("count-fragment", "65693"),
          ("count-fragment", "1338"), ("count-roman", "CDXCIV"), ("count-rounded-wrong", "nearly 1,000"),
          ("count-fragment", "2026"))),
    Fact(BATCH, ("The reconciliation batch had processed {q} rows.",),
         (("count", "18,734,221"), ("count-rounded", "about 18.7 million"), ("count-rounded", "18.7M"),
          ("count-rounded", "nearly 19 million"), ("count-bound", "over 18 million"), ("count-rounded", "roughly 18.7 million")),
         (("count-rounded-wrong", "about 25 million"), ("count-off", "18,734,222"), ("count-rounded-wrong", "1.8 million"),
          ("count-bound-wrong", "over 20 million"))),
    Fact(BATCH, ("The batch held {q} connections of the pool.",),
         (("count", "16"), ("number-words", "sixteen")),
         (("count-off", "17"), ("count-roman", "XVII"), ("number-words", "seventeen"), ("count-roman", "XV"))),
    Fact(STATS, ("{q} requests were waiting for a connection at 23:29.",),
         (("count", "60"), ("number-words", "sixty"), ("count-rounded", "about 60")),
         (("count-off", "61"), ("count-fragment", "29"), ("number-words", "eighty"), ("count-roman", "LXI"))),
    Fact(STATS, ("The pool had {q} active connections.", "All {q} connections of HikariPool-1 were busy."),
         (("count", "20"), ("number-words", "twenty"), ("count-rounded", "about 20")),
         (("count-off", "21"), ("count-off", "19"), ("number-words", "twenty-one"), ("count-roman", "XIX"))),
    # ---- listed items -----------------------------------------------------------------------------------------
    Fact(POOL, ("{q} pods logged the pool timeout.",),
         (("item-count", "4"), ("item-count", "four")),
         (("item-count-wrong", "6 different"), ("item-count-wrong", "seven"), ("item-count-wrong", "9"))),
    Fact(DEPLOYS, ("{q} deployments are listed.", "The deployments table shows {q} recent deployments."),
         (("item-count", "3"), ("item-count", "three")),
         (("item-count-wrong", "4"), ("item-count-wrong", "five"))),
    Fact(ALERTS, ("{q} alerts fired during the incident.",),
         (("item-count", "5"), ("item-count", "five")),
         (("item-count-wrong", "6"), ("item-count-wrong", "eight"))),
    # ---- percentages ------------------------------------------------------------------------------------------
    Fact(STATS, ("The pool was at {q} of its capacity.", "{q} of the pool's connections were active."),
         (("percent", "100 %"), ("percent", "100%"), ("percent", "100 percent")),
         (("percent-off", "95 %"), ("percent-off", "97%"), ("percent-off", "120 %"), ("percent-fragment", "29 %"))),
    # ---- times of day ------------------------------------------------------------------------------------------
    Fact(POOL, ("The first pool timeout was logged at {q}.", "Pool timeouts started at {q}."),
         (("time", "23:00"), ("time", "11:00 pm"), ("time", "23:00 UTC"), ("time", "11 pm"), ("time", "23:00:01")),
         (("time-off", "23:07"), ("time-off", "22:45"), ("time-off", "11:20 pm"), ("time-off", "23:00:09"),
          ("time-fragment", "23:38"))),
    Fact(DEPLOYS, ("order-service 4.18.0 was deployed at {q}.",),
         (("time", "22:55"), ("time", "10:55 pm"), ("time", "22:55 UTC")),
         (("time-off", "22:56"), ("time-off", "21:55"), ("time-fragment", "22:29"))),
    # ---- dates --------------------------------------------------------------------------------------------------
    Fact(DEPLOYS, ("order-service 4.18.0 was deployed on {q}.",),
         (("date", "2026-11-29"), ("date", "29 November"), ("date", "November 29, 2026"), ("date", "Nov 29")),
         (("date-other", "2026-11-30"), ("date-other", "30 November"), ("date-fragment", "2026-11-22"),
          ("date-other", "2026-12-29"), ("date-fragment", "2026-11-55"))),
    # ---- versions -------------------------------------------------------------------------------------------------
    Fact(DEPLOYS, ("The last order-service deployment was version {q}.", "order-service runs {q} since the deploy."),
         (("version", "4.18.0"), ("version", "v4.18.0")),
         (("version-never", "4.19.0"), ("version-off", "4.18.1"), ("version-fragment", "4.18.2"), ("version-fragment", "5.2.3"),
          ("version-fragment", "2.7.1"), ("version-never", "v4.17.9"), ("version-fragment", "4.21"))),
    # ---- the window and limit of a call --------------------------------------------------------------------------
    Fact(POOL, ("The search covered {q}.", "Logs were searched {q}."),
         (("window", "the 60 minutes before 23:30"), ("window", "a 1-hour window"), ("window", "22:30 to 23:30"),
          ("window", "the hour from 22:30"), ("window", "a 60-minute window")),
         (("window-off", "a 90-minute window"), ("window-off", "the 2 hours before 23:30"), ("window-off", "22:00 to 23:30"))),
    Fact(WIDE, ("The wider search covered {q}.",),
         (("window", "a 2-hour window"), ("window", "120 minutes"), ("window", "21:30 to 23:30")),
         (("window-off", "a 3-hour window"), ("window-off", "90 minutes"))),
    Fact(LATE, ("The late search covered {q} and matched 457 lines.",),
         (("window", "the 28 minutes from 23:02"), ("window", "23:02 to 23:30")),
         (("window-off", "the 30 minutes from 23:02"), ("window-off", "23:05 to 23:30"))),
    Fact(POOL, ("Only 5 of the 493 lines were read ({q}).", "The result is cut: {q}."),
         (("limit", "limit 5"), ("limit", "until 23:30 with limit 5"), ("limit", "the first 5 lines"),
          ("limit", "5 lines shown, limit 5")),
         (("limit-off", "limit 10"), ("limit-off", "until 23:30 with limit 50"), ("limit-off", "the first 20 lines"))),
    # ---- differences between two grounded times -----------------------------------------------------------------
    Fact(POOL + DEPLOYS, ("Pool timeouts began {q} the 4.18.0 deploy.", "The first timeout came {q} order-service 4.18.0 was deployed."),
         (("difference", "5 minutes after"), ("difference", "within 5 minutes of"), ("difference", "about 5 minutes after"),
          ("difference", "less than 10 minutes after")),
         (("difference-off", "15 minutes after"), ("difference-off", "an hour after"), ("difference-off", "2 minutes after"))),
    Fact(POOL + BATCH, ("The first pool timeout came {q} the reconciliation batch started.",),
         (("difference", "2 minutes after"), ("difference", "about 2 minutes after"), ("difference", "within 3 minutes of")),
         (("difference-off", "10 minutes after"), ("difference-off", "30 minutes after"))),
    Fact(DEPLOYS + POOL, ("From {q}, order-service went from its deploy to its first pool timeout.",),
         (("range", "22:55 to 23:00"), ("range", "between 22:55 and 23:00")),
         (("range-off", "23:10 to 23:20"),)),
    # ---- negative observations: the query text grounds only "nothing matched" -------------------------------------
    Fact(("s_none",), ("{q}",),
         (("negative", "No deployment of order-service 4.19.0 was found."),
          ("negative", "The deployments table has no row for version 4.19.0."),
          ("negative", "Nothing matched version 4.19.0 in the deployments table.")),
         (("negative-as-fact", "order-service 4.19.0 was rolled back."),
          ("negative-as-fact", "Version 4.19.0 failed its health check."),
          ("negative-as-fact", "4.19.0 is the version running now.")),
         kind="NEGATIVE_OBSERVATION", fields=("analysis",)),
    Fact(("c_none_oom",), ("{q}",),
         (("negative", "No OutOfMemoryError lines on order-service between 22:30 and 23:30."),
          ("negative", "The search for OutOfMemoryError in order-service ERROR logs found nothing in the hour before 23:30.")),
         (("negative-as-fact", "order-service hit 2 OutOfMemoryError crashes."),),
         kind="NEGATIVE_OBSERVATION", fields=("analysis",)),
    # ---- more of the incident: checkout errors, alerts, pool samples, deployments ---------------------------------
    Fact(C502, ("{q} checkout requests failed with 502 in the window.", "checkout-api logged {q} 502 responses."),
         (("count", "341"), ("count-rounded", "about 340"), ("count-bound", "over 300"), ("count-rounded", "roughly 350"),
          ("number-words", "three hundred and forty-one")),
         (("count-off", "342"), ("count-fragment", "431"), ("count-off", "3410"), ("count-rounded-wrong", "about 400"),
          ("count-fragment", "720"))),
    Fact(C502, ("checkout-api answered {q} to its callers.", "Callers of checkout-api got {q}."),
         (("status", "HTTP 502"), ("status", "502 Bad Gateway"), ("status", "status 502")),
         (("status-off", "HTTP 500"), ("status-off", "504 Gateway Timeout"), ("status-off", "status 500 errors"))),
    Fact(C504, ("{q} requests to checkout-api timed out at the gateway.",),
         (("count", "142"), ("count-rounded", "about 140"), ("count-bound", "more than 100")),
         (("count-off", "143"), ("count-fragment", "241"), ("count-bound-wrong", "more than 300"))),
    Fact(ALERTS, ("HikariPoolExhausted fired at {q}.", "The pool alert fired at {q}."),
         (("time", "23:01"), ("time", "23:01:30"), ("time", "11:01 pm")),
         (("time-off", "23:10"), ("time-off", "23:31"), ("time-fragment", "21:30"))),
    Fact(ALERTS, ("The pool alert saw waiting={q}.", "The alert counted {q} waiting requests."),
         (("count", "57"), ("number-words", "fifty-seven")),
         (("count-off", "58"), ("count-fragment", "75"), ("number-words", "fifty-eight"))),
    Fact(ALERTS, ("OrderServiceHighErrorRate fired: the 5xx ratio was above {q}.",),
         (("percent", "50%"), ("percent", "50 %"), ("percent", "50 percent")),
         (("percent-off", "55%"), ("percent-off", "60 %"))),
    Fact(ALERTS, ("The 5xx ratio stayed high for {q} before the alert fired.",),
         (("duration-unit", "2 minutes"), ("duration-unit", "120 s"), ("duration-unit", "2 min")),
         (("duration-off", "5 minutes"), ("duration-swapped-unit", "2 hours"), ("duration-off", "20 s"))),
    Fact(ALERTS, ("payment-service timed out calling order-service more than {q}.",),
         (("rate", "20/min"), ("rate", "20 per minute"), ("rate", "20 times per minute")),
         (("rate-off", "20/s"), ("rate-off", "30 per minute"))),
    Fact(ALERTS, ("The inventory cache refresh took longer than {q}.",),
         (("duration-unit", "800ms"), ("duration-unit", "0.8 s"), ("duration-unit", "800 milliseconds")),
         (("duration-off", "8 s"), ("duration-swapped-unit", "800 s"))),
    Fact(STATS, ("timeouts per sample went from {q}.",),
         (("range", "18 to 26"), ("range", "18 up to 26")),
         (("range-off", "18 to 30"), ("range-off", "12 to 26"))),
    Fact(STATS + BATCH, ("The batch held {q} of the pool.",),
         (("percent", "16 of the 20 connections (80 %)"), ("percent", "16 of 20 connections, 80%")),
         (("percent-off", "16 of the 20 connections (85 %)"), ("percent-off", "16 of 20 connections, 75%"))),
    Fact(BATCH, ("The reconciliation batch started at {q}.",),
         (("time", "22:58"), ("time", "10:58 pm"), ("time", "22:58 UTC")),
         (("time-off", "22:48"), ("time-off", "23:58"))),
    Fact(DEPLOYS, ("checkout-api {q} was the last deploy before the incident day.", "inventory-service runs {q}."),
         (("version", "5.2.1"), ("version", "2.7.3")),
         (("version-off", "5.2.2"), ("version-fragment", "2.7.5"), ("version-never", "3.0.0"))),
    Fact(DEPLOYS, ("checkout-api 5.2.1 was deployed on {q}.",),
         (("date", "2026-11-28"), ("date", "Nov 28"), ("date", "28 November 2026")),
         (("date-other", "2026-11-27"), ("date-other", "Nov 26"))),
    Fact(("c_none",), ("{q}",),
         (("negative", "No timeout lines from notification-service between 22:30 and 23:30."),
          ("negative", "notification-service logged nothing matching timeout in the 60 minutes before 23:30 (limit 20).")),
         (("negative-as-fact", "notification-service timed out 20 times."),
          ("negative-as-fact", "notification-service timed out at 22:41.")),
         kind="NEGATIVE_OBSERVATION", fields=("analysis",)),
    Fact(POOL, ("493 matching lines in the 60-minute window, {q}.",),
         (("rate-of", "about 8 per minute"), ("rate-of", "roughly 0.14/s"), ("rate-of", "about 490 per hour")),
         (("rate-of-wrong", "about 30 per minute"), ("rate-of-wrong", "about 8 per second"))),
    Fact(C502, ("checkout-api calls to order-service took {q} before the 502.",),
         (("range-unit", "30.0-30.1 s"), ("range-unit", "30 to 30.1 seconds"), ("range-unit", "30034-30067 ms")),
         (("range-unit-off", "3.0-3.1 s"), ("range-unit-off", "30-40 s"))),
    Fact(STATS, ("The samples add up to {q}.", "Across the three samples there were {q}."),
         (("sum", "70 timeouts"), ("sum", "176 waiting requests")),
         (("sum-wrong", "71 timeouts"), ("sum-wrong", "170 waiting requests"))),
    # ---- units in a sibling field and in metric names ---------------------------------------------------------
    Fact(UNITS, ("CPUUtilization of the database reached {q}.",),
         (("sibling-unit", "92 %"), ("sibling-unit", "92%"), ("sibling-unit", "92 percent"), ("sibling-unit", "about 92 %")),
         (("sibling-unit-swapped", "92 ms"), ("sibling-unit-off", "95 %"), ("sibling-unit-swapped", "92 MB"))),
    Fact(UNITS, ("The p99 of ReadLatency was {q}.",),
         (("sibling-unit", "1.5 s"), ("sibling-unit", "1500 ms"), ("sibling-unit", "1.5 seconds")),
         (("sibling-unit-swapped", "1.5 ms"), ("sibling-unit-off", "2.5 s"), ("sibling-unit-swapped", "1.5 %"))),
    Fact(UNITS, ("FreeableMemory was down to {q}.",),
         (("sibling-unit", "512 MiB"), ("sibling-unit", "536.9 MB"), ("sibling-unit", "0.5 GiB"), ("sibling-unit", "about 537 MB")),
         (("sibling-unit-swapped", "512 GB"), ("sibling-unit-off", "256 MiB"), ("sibling-unit-swapped", "512 ms"))),
    Fact(UNITS, ("DatabaseConnections stood at {q}.",),
         (("sibling-unit", "42"), ("sibling-unit", "42 connections")),
         (("sibling-unit-off", "43"), ("sibling-unit-swapped", "42 s"))),
    Fact(UNITS, ("WriteIOPS peaked at {q}.",),
         (("sibling-unit", "120/s"), ("sibling-unit", "120 per second"), ("sibling-unit", "120 ops/s")),
         (("sibling-unit-off", "150/s"), ("sibling-unit-swapped", "120 per minute"))),
    Fact(LOG_UNITS, ("The slowest query took {q}.",),
         (("sibling-unit", "2.5 s"), ("sibling-unit", "2500 ms"), ("sibling-unit", "2.5 seconds")),
         (("sibling-unit-swapped", "2.5 ms"), ("sibling-unit-off", "25 s"))),
    Fact(LOG_UNITS, ("The response body was {q}.",),
         (("sibling-unit", "2 MiB"), ("sibling-unit", "2.1 MB"), ("sibling-unit", "2,097,152 bytes")),
         (("sibling-unit-swapped", "2 GiB"), ("sibling-unit-off", "3 MiB"))),
    Fact(SERIES, ("The p99 request duration was {q}.",),
         (("metric-suffix", "250 ms"), ("metric-suffix", "0.25 s"), ("metric-suffix", "0.25 seconds")),
         (("metric-suffix-swapped", "250 s"), ("metric-suffix-off", "350 ms"))),
    Fact(SERIES, ("Resident memory was {q}.",),
         (("metric-suffix", "1 GiB"), ("metric-suffix", "1.07 GB"), ("metric-suffix", "1024 MiB")),
         (("metric-suffix-swapped", "1 TiB"), ("metric-suffix-off", "2 GiB"))),
    Fact(SERIES, ("CPU saturation was {q}.",),
         (("metric-suffix", "92 %"), ("metric-suffix", "92 percent")),
         (("metric-suffix-off", "0.92 %"), ("metric-suffix-off", "29 %"))),
)


def unit_records() -> list[CanonicalRecord]:
    """Records whose values carry their unit beside them: a CloudWatch-style metrics table (value + unit columns),
    log lines with `*_unit` and `unit` fields, and series named with Prometheus unit suffixes."""
    metrics = sql_record(
        "gen", "u_metrics", "SELECT metric_name, stat, value, unit FROM rds_metrics WHERE db = 'orders' LIMIT 5",
        ["metric_name", "stat", "value", "unit"],
        [["CPUUtilization", "Maximum", 92.0, "Percent"], ["ReadLatency", "p99", 1.5, "Seconds"],
         ["FreeableMemory", "Minimum", 536870912, "Bytes"], ["DatabaseConnections", "Maximum", 42, "Count"],
         ["WriteIOPS", "Maximum", 120, "Count/Second"]],
    )
    logs = logs_record("gen", "u_logs", [("2026-11-29T23:04:10Z", "WARN", "slow query on orders"),
                                         ("2026-11-29T23:04:12Z", "WARN", "large response")], service="order-service",
                       query="slow", level="WARN")
    projection = dict(logs.projection or {})
    lines = [dict(line) for line in projection["logs"]]
    lines[0]["fields"] = {"query_time": 2.5, "query_time_unit": "s", "table": "orders"}
    lines[1]["fields"] = {"body_size": 2097152, "units": "bytes", "route": "/api/v1/orders"}
    projection["logs"] = lines
    series = sql_record(
        "gen", "u_series", "SELECT metric, value FROM series", ["metric", "value"],
        [["http_request_duration_seconds{quantile=\"0.99\"}", 0.25], ["process_resident_memory_bytes", 1073741824],
         ["node_cpu_saturation_ratio", 0.92]],
    )
    return [metrics, logs.model_copy(update={"projection": projection}), series]


def _draft(fact: Fact, field: str, sentence: str) -> dict[str, Any]:
    """The sentence in one published field; the other parts carry no quantity."""
    base = "Pool timeouts and upstream errors on order-service." if fact.kind == "NORMAL" else sentence
    analysis = [{"analysis_id": "a1", "kind": fact.kind, "text": sentence if field == "analysis" else base,
                 "tool_call_ids": list(fact.calls)}]
    draft: dict[str, Any] = {"conclusion": None, "analysis": analysis, "action_plan": [], "recommendations": [],
                             "limitations": {"scope": "order-service logs, the database tables and metrics", "missing_info": []}}
    if field == "conclusion":
        draft["conclusion"] = {"text": sentence, "based_on_analysis_ids": ["a1"]}
    elif field == "action":
        draft["action_plan"] = [{"action": "Check this first: " + sentence, "based_on_analysis_ids": ["a1"],
                                 "requires_human_confirmation": False}]
    elif field == "recommendation":
        draft["recommendations"] = [{"text": "Keep in mind: " + sentence, "based_on_analysis_ids": ["a1"]}]
    elif field == "scope":
        draft["limitations"]["scope"] = sentence
    elif field == "missing_info":
        draft["limitations"]["missing_info"] = [sentence]
    return draft


LEADS = ("", "", "", "Per the cited logs, ", "On order-service, ", "As observed, ", "In this window, ", "From the evidence: ")
TAILS = ("", "", "", " (see the cited calls)", " — this needs a closer look", "; nothing else stood out")


def _sentence(template: str, form: str, rng: random.Random) -> str:
    text = template.replace("{q}", form)
    text = text[:1].upper() + text[1:]
    lead, tail = rng.choice(LEADS), rng.choice(TAILS)
    if lead:
        text = lead + text[:1].lower() + text[1:] if not text[:2].isupper() else lead + text
    if tail and text.endswith("."):
        text = text[:-1] + tail + "."
    return text


def all_cases(rng: random.Random) -> Iterator[Case]:
    """Every (fact, form, field) with a sentence the seed picks; honest forms are valid, inventions must be blocked."""
    number = 0
    for fact in FACTS:
        for valid, forms in ((True, fact.honest), (False, fact.invented)):
            for klass, form in forms:
                for field in fact.fields:
                    number += 1
                    sentence = _sentence(rng.choice(fact.sentences), form, rng)
                    yield Case(id=f"g{number:05d}", category=("honest " if valid else "invented ") + klass,
                               calls=list(fact.calls), draft=_draft(fact, field, sentence),
                               expect={"valid": valid, "codes": [] if valid else [NUMBER]}, note=f"{field}: {form}")


def generate(seed: int, cases: int | None = None) -> list[Case]:
    """The cases of one seed: every (fact, form, field) combination, repeated with fresh sentences until `cases`
    (default: one round), in an order the seed shuffles."""
    rng = random.Random(seed)
    pool = list(all_cases(rng))
    rounds = pool[:]
    while cases is not None and len(rounds) < cases:
        rounds += [c.model_copy(update={"id": f"{c.id}r{len(rounds)}"}) for c in all_cases(rng)]
    rng.shuffle(rounds)
    return rounds[:cases] if cases is not None else rounds


def shared_records() -> dict[str, CanonicalRecord]:
    """The demo incident's records and the unit records, by tool_call_id."""
    records = {}
    for line in RECORDS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = CanonicalRecord.model_validate_json(line)
            records[record.tool_call_id] = record
    records.update({r.tool_call_id: r for r in unit_records()})
    return records


@dataclass
class Rates:
    """Per class: how many cases and how many the guard got wrong (an invention let through, an honest form refused)."""

    total: int = 0
    wrong: int = 0


async def evaluate(cases: list[Case]) -> tuple[dict[str, Rates], list[CaseResult]]:
    shared, rules = shared_records(), load_rules()
    rates: dict[str, Rates] = {}
    misses: list[CaseResult] = []
    for case in cases:
        result = await run_case(case, shared, rules)
        stats = rates.setdefault(case.category, Rates())
        stats.total += 1
        if not result.correct:
            stats.wrong += 1
            misses.append(result)
    return dict(sorted(rates.items())), misses


def summary(rates: dict[str, Rates]) -> tuple[float, float, int, int]:
    """(blocked share of inventions, refused share of honest forms, inventions, honest forms)."""
    invented = [r for k, r in rates.items() if k.startswith("invented ")]
    honest = [r for k, r in rates.items() if k.startswith("honest ")]
    n_inv, n_hon = sum(r.total for r in invented), sum(r.total for r in honest)
    blocked = 1 - sum(r.wrong for r in invented) / n_inv if n_inv else 1.0
    refused = sum(r.wrong for r in honest) / n_hon if n_hon else 0.0
    return blocked, refused, n_inv, n_hon


def report(rates: dict[str, Rates], misses: list[CaseResult], out: Any = print, show: int = 20) -> None:
    out(f"{'class':38} {'cases':>7} {'wrong':>7} {'rate':>8}")
    for name, stats in rates.items():
        rate = (stats.total - stats.wrong) / stats.total
        label = "blocked" if name.startswith("invented") else "passed"
        out(f"{name:38} {stats.total:7} {stats.wrong:7} {rate:7.1%} {label}")
    blocked, refused, n_inv, n_hon = summary(rates)
    out(f"total: {n_inv + n_hon} cases; blocked {blocked:.2%} of {n_inv} inventions, refused {refused:.2%} of {n_hon} "
        f"honest forms (floor: 100 % blocked, at most 1 % refused)")
    for miss in misses[:show]:
        out(f"MISS {miss.case.category} [{miss.case.note}]: {'refused' if miss.case.expect.valid else 'published'}")
        for message in miss.messages[:2]:
            out(f"    {message}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=None, help="how many cases (default: one round of every form)")
    parser.add_argument("--out", type=Path, default=None, help="write records.jsonl and cases.jsonl here")
    args = parser.parse_args()
    cases = generate(args.seed, args.cases)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        records = shared_records()
        (args.out / "records.jsonl").write_text("".join(r.model_dump_json(exclude={"raw_result"}) + "\n" for r in records.values()))
        (args.out / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    rates, misses = asyncio.run(evaluate(cases))
    print(f"seed {args.seed}")
    report(rates, misses)
    blocked, refused, _, _ = summary(rates)
    return 0 if blocked == 1.0 and refused <= 0.01 else 1


if __name__ == "__main__":
    raise SystemExit(main())
