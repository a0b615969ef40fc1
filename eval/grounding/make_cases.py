"""Make cases.jsonl: labelled drafts over the demo incident (records.jsonl), honest and invented, per kind, derivation,
argument rule, published field and citation fault. Run from the repo root: python eval/grounding/make_cases.py

Invented cases are written the way a confabulating model writes: timestamp parts as counts, id and version digits,
dates, 42k/42%/1e3, "30000 customers" from 30000ms, number words, numbers in the limitations, arguments grounding
claims (limit=17 -> "17 times", a SQL literal -> "v4.19.0 was rolled out"). Honest cases are what an engineer
writes from the same evidence ("timed out after 30 s" for 30000ms, "100% of the pool" for active=20 max_size=20,
"for 28 minutes, from 23:02 to 23:30", "in the 2-hour window", "at 11:00 pm").
"""

# ruff: noqa: E501  (case tables read best one case a line)
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from metrics_cases import add_cases as add_metrics_cases

OUT = Path(__file__).resolve().parent / "cases.jsonl"
NUMBER = "NUMBER_NOT_IN_EVIDENCE"
SCOPE = "order-service ERROR logs and the deployments table"
Analysis = tuple[str, list[str]] | tuple[str, list[str], str]

CASES: list[dict[str, Any]] = []


def draft(*analyses: Analysis, conclusion: tuple[str, list[str]] | None = None, actions: tuple[tuple[str, list[str]], ...] = (),
          recs: tuple[tuple[str, list[str]], ...] = (), scope: str = SCOPE, missing: tuple[str, ...] = ()) -> dict[str, Any]:
    items = []
    for i, analysis in enumerate(analyses, 1):
        text, calls, kind = analysis if len(analysis) == 3 else (*analysis, "NORMAL")  # type: ignore[misc]
        items.append({"analysis_id": f"a{i}", "kind": kind, "text": text, "tool_call_ids": calls})
    return {
        "conclusion": {"text": conclusion[0], "based_on_analysis_ids": conclusion[1]} if conclusion else None,
        "analysis": items,
        "action_plan": [{"action": a, "based_on_analysis_ids": ids, "requires_human_confirmation": True} for a, ids in actions],
        "recommendations": [{"text": r, "based_on_analysis_ids": ids} for r, ids in recs],
        "limitations": {"scope": scope, "missing_info": list(missing)},
    }


def case(category: str, valid: bool, d: dict[str, Any], note: str = "", codes: list[str] | None = None,
         extra: list[dict[str, Any]] | None = None, also: tuple[str, ...] = ()) -> None:
    """`also`: calls of the run that the draft does not cite (the limitations may rest on them)."""
    cited = {c for a in d["analysis"] for c in a["tool_call_ids"] if not c.startswith("x_") and c != "call_fabricated"}
    calls = sorted(cited | set(also))
    CASES.append({
        "id": f"{category}-{'ok' if valid else 'bad'}-{sum(c['category'] == category for c in CASES) + 1:02d}",
        "category": category, "calls": calls, "records": extra or [], "draft": d,
        "expect": {"valid": valid, "codes": [] if valid else (codes or [NUMBER])}, "note": note,
    })


def one(category: str, valid: bool, text: str, calls: list[str], note: str = "", kind: str = "NORMAL") -> None:
    case(category, valid, draft((text, calls, kind)), note)


POOL = ["c_pool"]
# ---- counts ---------------------------------------------------------------------------------------------------
for text in ["493 ERROR lines matched 'Connection is not available' on order-service.",
             "The query matched 493 lines; 5 were shown.",
             "4 pods logged the pool timeout: order-service-7d9fb-65693, order-service-7d9fd-48734, order-service-7d9ff-15917 "
             "and order-service-7d9fc-98074.",
             "5 of the 493 matching lines are shown, all from HikariPool-1."]:
    one("count", True, text, POOL)
for text, note in [("3 pods were OOMKilled.", "3 only inside timestamps (23:00:03.500)"),
                   ("order-service was OOMKilled x3 since the deploy.", "x3 is a count"),
                   ("7 restarts of order-service-7d9fb-65693 were seen.", "7 only inside timestamps/ids"),
                   ("The pool timed out 1338 times.", "1338 is the milliseconds of a timestamp"),
                   ("65693 requests failed.", "digits of a pod id"),
                   ("HikariPool-1 failed for 15917 orders.", "digits of a pod id"),
                   ("494 ERROR lines matched.", "off by one"),
                   ("There were 12 pool timeouts per pod.", "never shown")]:
    one("count", False, text, POOL, note)
# ---- plain numbers ----------------------------------------------------------------------------------------------
for text, calls in [("The pool had active=20 idle=0 with waiting=60 at 23:29.", ["s_pool"]),
                    ("max_size is 20 and idle is 0 in every sample.", ["s_pool"]),
                    ("The reconciliation batch had processed 18,734,221 rows and held 16 connections.", ["s_batch"]),
                    ("The alert reported waiting=57.", ["s_alerts"])]:
    one("number", True, text, calls)
for text, calls, note in [("The pool had active=20 idle=0 with waiting=61.", ["s_pool"], "61 never shown"),
                          ("max_size is 30.", ["s_pool"], "30 only inside a duration/timestamp"),
                          ("The batch held 17 connections.", ["s_batch"], "17 never shown"),
                          ("The batch had processed 18,734,222 rows.", ["s_batch"], "off by one"),
                          ("waiting peaked at 2026.", ["s_pool"], "the year of a timestamp"),
                          ("The pool reported 29 waiting threads.", ["s_pool"], "29 is a minute of a timestamp")]:
    one("number", False, text, calls, note)
# ---- percentages ------------------------------------------------------------------------------------------------
for text in ["The alert fired because the 5xx ratio was above 50% for 2m.", "Checkout's 5xx ratio was above 40% for 3m."]:
    one("percentage", True, text, ["s_alerts"])
one("percentage", True, "The pool was at 100% of its size: active=20 of max_size=20.", ["s_pool"])
one("percentage", True, "100% of the pool was in use (active=20, max_size=20).", ["s_pool"])
for text, calls, note in [("The 5xx ratio reached 42%.", ["s_alerts"], "never shown"),
                          ("50 percent of checkouts failed with 502.", ["c_checkout502"], "50 is not a percentage there"),
                          ("The pool was 95% utilised.", ["s_pool"], "no two numbers give 95%"),
                          ("5% of requests timed out after 30000ms.", POOL, "5 is a count of lines, not a percentage"),
                          ("20% of the pool was idle.", ["s_pool"], "20 is a size, not a percentage")]:
    one("percentage", False, text, calls, note)
# ---- durations -----------------------------------------------------------------------------------------------
for text in ["Connection requests timed out after 30 s.", "HikariPool-1 has a 30-second connection timeout.",
             "Requests timed out after 30000ms.", "Every request waited 30 seconds before failing.",
             "Each timeout took half a minute (30 s)."]:
    one("duration", True, text, POOL)
one("duration", True, "checkout-api gave up after 30 s waiting for order-service.", ["c_checkout504"])
one("duration", True, "checkout requests failed after about 30 seconds (latency_ms=30064).", ["c_checkout502"])
one("duration", True, "The inventory cache refresh took longer than 800ms.", ["s_alerts"])
for text, calls, note in [("The slow SQL took 12s.", POOL, "never shown"),
                          ("Requests timed out after 30 ms.", POOL, "30000 ms is 30 s, not 30 ms"),
                          ("Requests timed out after 300 s.", POOL, "off by a factor of ten"),
                          ("A 9-minute stall preceded the errors.", POOL, "9 only inside timestamps"),
                          ("Checkout latency was 31 s.", ["c_checkout502"], "30064 ms rounds to 30 s, not 31"),
                          ("The cache refresh took 8 s.", ["s_alerts"], "800 ms is not 8 s"),
                          ("Requests timed out after thirty-five seconds.", POOL, "number words")]:
    one("duration", False, text, calls, note)
# ---- sizes and rates (a heap log of the same incident, given inline) ----------------------------------------------
HEAP = {
    "run_id": "eval", "tool_call_id": "x_heap", "tool_name": "query_logs", "arguments": {"service": "order-service", "query": "GC"},
    "effective_arguments": {"service": "order-service", "query": "GC", "start": "2026-11-29T22:30:00Z",
                            "end": "2026-11-29T23:30:00Z", "limit": 20},
    "state": "READY", "evidence_status": "EVIDENCE_FOUND",
    "projection": {"tool_call_id": "x_heap", "tool_name": "query_logs", "evidence_status": "EVIDENCE_FOUND", "count": 2,
                   "truncated": False, "window_start": "2026-11-29T22:30:00Z", "window_end": "2026-11-29T23:30:00Z",
                   "logs": [{"timestamp": "2026-11-29T23:04:10.000Z", "service": "order-service", "level": "WARN",
                             "message": "GC pause 850ms, heap used 1536MB of 2048MB, allocation rate 120 MB/s", "fields": {}},
                            {"timestamp": "2026-11-29T23:05:10.000Z", "service": "order-service", "level": "WARN",
                             "message": "request rate 42 req/s, heap used 1.5 GB", "fields": {"heap_bytes": 1610612736}}]},
    "started_at": "2026-11-29T23:30:00Z",
}
for text, valid, note in [("Heap use reached 1536MB of 2048MB.", True, ""), ("Heap use reached 1.5 GB.", True, ""),
                          ("The heap was 2 GB in size (2048MB).", True, "binary reading of GB"),
                          ("Heap use reached 1.6 GB.", True, "heap_bytes 1610612736 = 1.6 GB decimal"),
                          ("Heap use reached 1.8 GB.", False, "never shown"), ("The heap is 4096MB.", False, "never shown"),
                          ("The heap grew by 512 KB per request.", False, "512 never shown")]:
    case("size", valid, draft((text, ["x_heap"])), note, extra=[HEAP])
for text, valid, note in [("The service handled 42 req/s.", True, ""), ("Load was 42 requests per second.", True, ""),
                          ("Load was 2520 requests per minute.", True, "42/s in per-minute terms"),
                          ("Load was 420 req/s.", False, "never shown"), ("Load was 42 req/min.", False, "42/s is not 42/min"),
                          ("Errors arrived at 20 per second.", False, "the alert says 20/min")]:
    case("rate", valid, draft((text, ["x_heap", "s_alerts"] if "20" in text else ["x_heap"])), note, extra=[HEAP])
case("rate", True, draft(("Payment timeouts were above 20/min.", ["s_alerts"])))
# ---- times of day ---------------------------------------------------------------------------------------------
for text in ["The first timeout was logged at 23:00.", "The first timeout was logged at 23:00:01.",
             "The first timeout was logged at 11:00 pm.", "The first timeout was logged at 11:00 p.m. UTC.",
             "Timeouts were logged at 23:00:03.500 and 23:00:07.512.", "Timeouts began at 23:00 UTC."]:
    one("time", True, text, POOL)
one("time", True, "The last pool sample, at 23:29, showed waiting=60.", ["s_pool"])
for text, note in [("The first timeout was logged at 22:59.", "a minute before any line"),
                   ("The first timeout was logged at 23:00:02.", "no line at 23:00:02"),
                   ("The first timeout was logged at 11:00 am.", "11:00 am is not 23:00"),
                   ("The worst burst came at 23:17.", "no line at 23:17"),
                   ("Timeouts started at 2:02 pm.", "no 14:02 anywhere")]:
    one("time", False, text, POOL, note)
# ---- dates -------------------------------------------------------------------------------------------------------
for text, calls in [("The errors started on 2026-11-29.", POOL), ("order-service 4.18.0 was deployed on Nov 29, 2026.", ["s_deploys"]),
                    ("checkout-api 5.2.1 was deployed on 2026-11-28 at 16:40.", ["s_deploys"]),
                    ("order-service 4.18.0 went out on 29 November 2026 at 22:55.", ["s_deploys"])]:
    one("date", True, text, calls)
for text, calls, note in [("order-service 4.18.0 was deployed on 2026-11-05.", ["s_deploys"], "date fragments 11 and 05 exist"),
                          ("The errors started on 2026-11-28.", POOL, "no line on the 28th"),
                          ("order-service 4.18.0 was deployed on Nov 27.", ["s_deploys"], "no row on the 27th"),
                          ("checkout-api 5.2.1 was deployed on 2026-11-29 at 16:40.", ["s_deploys"], "wrong day for that time")]:
    one("date", False, text, calls, note)
# ---- versions -----------------------------------------------------------------------------------------------------
for text in ["The latest deploy of order-service was 4.18.0 at 22:55.", "order-service v4.18.0 replaced the previous release.",
             "The 4.18.0 release added the reconciliation v2 batch job.", "inventory-service runs 2.7.3 and checkout-api 5.2.1."]:
    one("version", True, text, ["s_deploys"])
one("version", True, "The erroring pods run version 4.18.0.", POOL)
for text, calls, note in [("v4.19.0 was rolled out at 22:55.", ["s_deploys"], "never shown"),
                          ("The latest deploy of order-service was 4.18.", ["s_deploys"], "versions match exactly"),
                          ("order-service 4.17.2 was rolled back.", ["s_deploys"], "4.17.2 is not in these rows"),
                          ("The erroring pods run version 4.18.1.", POOL, "never shown"),
                          ("The reconciliation v3 batch job was enabled.", ["s_deploys"], "v3 is not v2")]:
    one("version", False, text, calls, note)
# ---- identifiers ------------------------------------------------------------------------------------------------------
for text, calls in [("HikariPool-1 ran out of connections.", POOL), ("checkout-api returned 502 Bad Gateway for POST /api/v1/checkout.",
                    ["c_checkout502"]), ("order-service answered HTTP 503 to checkout-api.", ["c_checkout502"]),
                    ("checkout-api answered 504 Gateway Timeout.", ["c_checkout504"]),
                    ("Pod order-service-7d9ff-15917 logged two of the timeouts.", POOL),
                    ("The trace 3c3be714fdb77bfd shows the first failure.", POOL)]:
    one("identifier", True, text, calls)
for text, calls, note in [("HikariPool-2 ran out of connections.", POOL, "another pool"),
                          ("checkout-api answered HTTP 500.", ["c_checkout502"], "500 never shown"),
                          ("Pod order-service-7d9ff-15918 logged the timeouts.", POOL, "another pod"),
                          ("MySQL error 1040 (too many connections) was logged.", POOL, "error code never shown"),
                          ("Connections to mysql:3306 were refused.", POOL, "port never shown"),
                          ("The trace 3c3be714fdb77bfe shows the first failure.", POOL, "another trace id"),
                          ("Incident INC-2292 was opened.", ["s_alerts"], "never shown")]:
    one("identifier", False, text, calls, note)
# ---- magnitudes -------------------------------------------------------------------------------------------------
one("magnitude", True, "The reconciliation batch had processed about 18.7M rows.", ["s_batch"])
one("magnitude", True, "The reconciliation batch had processed 18734k rows.", ["s_batch"])
one("magnitude", True, "Roughly 0.5k timeouts matched (493).", POOL)
one("magnitude", True, "The batch had processed about 19M rows.", ["s_batch"], "18.7M rounds to 19M")
for text, calls, note in [("The outage affected 42k users.", POOL, "never shown"),
                          ("1e3 requests timed out.", POOL, "1e3 is 1000"),
                          ("The batch processed 17M rows.", ["s_batch"], "18.7M is not 17M"),
                          ("493k lines matched.", POOL, "493 is not 493k"),
                          ("30000 customers saw timeouts.", POOL, "30000 is a duration in ms")]:
    one("magnitude", False, text, calls, note)
# ---- number words -------------------------------------------------------------------------------------------------
for text, calls in [("Four pods logged the pool timeout.", POOL), ("Requests timed out after thirty seconds.", POOL),
                    ("The pool has twenty connections, all active.", ["s_pool"]),
                    ("Five of the matching lines are shown.", POOL)]:
    one("number-words", True, text, calls)
for text, calls, note in [("The pool was exhausted seventeen times.", POOL, ""), ("A dozen pods restarted.", POOL, "a dozen = 12"),
                          ("order-service failed twice before the deploy.", ["s_deploys"], "twice = 2 times"),
                          ("Twenty-five connections were waiting.", ["s_pool"], "25 never shown"),
                          ("A couple of hundred requests failed.", POOL, "200 never shown"),
                          ("Nine pods logged the pool timeout.", POOL, "four did")]:
    one("number-words", False, text, calls, note)
# ---- derivations ---------------------------------------------------------------------------------------------------
LATE = ["c_pool_late"]
for text in ["The pool stayed saturated for 28 minutes, from 23:02 to 23:30.",
             "Timeouts continued from 23:02 until 23:30, 28 min in all."]:
    one("derived-time-difference", True, text, LATE)
one("derived-time-difference", True, "The batch started at 22:58, 2 minutes before the first timeout at 23:00.", ["s_batch", "c_pool"])
one("derived-time-difference", True, "The deploy at 22:55 came 5 minutes before the first timeout at 23:00.", ["s_deploys", "c_pool"])
for text, calls, note in [("The pool stayed saturated for 35 minutes, from 23:02 to 23:30.", LATE, "28, not 35"),
                          ("The pool stayed saturated for 28 minutes.", POOL, "no times stated to derive from"),
                          ("The deploy at 22:55 came 10 minutes before the first timeout at 23:00.", ["s_deploys", "c_pool"], "5, not 10"),
                          ("From 23:02 to 23:45 the pool stayed saturated, 43 minutes.", LATE, "23:45 is not grounded")]:
    one("derived-time-difference", False, text, calls, note)
for text, calls in [("In the 2-hour window no other error appeared before 23:00.", ["c_window2h"]),
                    ("The search covered the 60 minutes before 23:30.", POOL), ("The search covered one hour, 22:30 to 23:30.", POOL),
                    ("The 28-minute window from 23:02 showed 457 matches.", LATE)]:
    one("derived-window-length", True, text, calls)
for text, calls, note in [("In the 3-hour window no other error appeared.", ["c_window2h"], "2 hours"),
                          ("The search covered the 90 minutes before 23:30.", POOL, "60"),
                          ("In the 2-hour window the pool was healthy.", POOL, "this call's window is one hour")]:
    one("derived-window-length", False, text, calls, note)
for text in ["waiting=57 against active=20 means the queue was 285% of the pool.", "idle=0 of max_size=20 is 0% idle."]:
    one("derived-percentage", True, text, ["s_alerts" if "57" in text else "s_pool"])
one("derived-percentage", True, "5 of the 493 matches are shown (1%).", POOL)
one("derived-percentage", True, "The pool was 100% busy.", ["s_pool"])
for text, calls, note in [("5 of the 493 matches are shown (10%).", POOL, "1%, not 10%"),
                          ("The pool was 75% busy.", ["s_pool"], "20 of 20 is 100%"),
                          ("Timeouts were 26 of 60 waiting requests, 50%.", ["s_pool"], "26/60 is 43%")]:
    one("derived-percentage", False, text, calls, note)
for text, calls in [("6 pods logged the pool timeout.", ["c_pool17"]), ("17 lines are shown.", ["c_pool17"]),
                    ("3 pool samples were read, all with idle=0.", ["s_pool"]), ("5 alerts fired.", ["s_alerts"]),
                    ("2 of the 5 lines come from order-service-7d9ff-15917.", POOL)]:
    one("derived-item-count", True, text, calls)
for text, calls, note in [("7 pods logged the pool timeout.", ["c_pool17"], "6 distinct pods"),
                          ("4 alerts fired.", ["s_alerts"], "5 rows"),
                          ("3 of the 5 lines come from order-service-7d9ff-15917.", POOL, "2 do")]:
    one("derived-item-count", False, text, calls, note)
case("derived-sum", True, draft(("834 lines matched across both queries (493 and 341).", ["c_pool", "c_checkout502"])))
case("derived-sum", True, draft(("The three samples add up to 70 timeouts.", ["s_pool"])))
case("derived-sum", True, draft(("176 requests were waiting across the three samples.", ["s_pool"])))
case("derived-sum", False, draft(("900 lines matched across both queries.", ["c_pool", "c_checkout502"])), "834")
case("derived-sum", False, draft(("The three samples add up to 80 timeouts.", ["s_pool"])), "70")
# ---- arguments ground only what they say -----------------------------------------------------------------------------
P17 = ["c_pool17"]
for text in ["The first 17 lines were read; all show HikariPool-1 timeouts.", "Only the first 17 matches were fetched (limit 17).",
             "Up to 17 lines were requested; 493 matched."]:
    one("argument-limit", True, text, P17)
for text, note in [("The pool was exhausted 17 times.", "limit=17 grounds only statements about the limit"),
                   ("17 pods logged the timeout.", "the limit is not a count of pods"),
                   ("HikariPool-1 timed out 17 times per minute.", "the limit is not a rate")]:
    one("argument-limit", False, text, P17, note)
one("argument-window", True, "No notification-service line matched 'timeout' between 22:30 and 23:30.", ["c_none"],
    kind="NEGATIVE_OBSERVATION")
one("argument-window", True, "The search window was 22:30 to 23:30 UTC on 2026-11-29.", POOL)
one("argument-window", False, "30 timeouts were logged at the start of the window.", POOL, "30 is the window's minute")
one("argument-window", False, "The search found 2026 matches.", POOL, "the window's year is not a count")
one("argument-query", True, "No deployment of order-service 4.19.0 was found.", ["s_none"], kind="NEGATIVE_OBSERVATION")
one("argument-query", True, "The query for version = '4.19.0' matched no rows.", ["s_none"], kind="NEGATIVE_OBSERVATION")
for text, calls, note in [("v4.19.0 was rolled out before the errors.", ["s_deploys", "s_none"], "the SQL literal grounds only "
                           "the negative observation restating it"),
                          ("order-service 4.18.0 replaced 4.19.0.", ["s_deploys"], "4.19.0 is only a SQL literal of another call"),
                          ("Version 4.19.0 is the current release.", ["s_deploys"], "not in the results")]:
    d = draft((text, ["s_deploys"])) if calls == ["s_deploys"] else draft(("No 4.19.0 row was found.", ["s_none"], "NEGATIVE_OBSERVATION"),
                                                                           (text, ["s_deploys"]))
    case("argument-query", False, d, note)
# ---- every published field --------------------------------------------------------------------------------------------
A1 = ("HikariPool-1 connection requests timed out after 30000ms from 23:00.", POOL)
A2 = ("The latest order-service deployment is 4.18.0 at 22:55.", ["s_deploys"])
case("field-conclusion", True, draft(A1, A2, conclusion=("The pool is exhausted since 23:00, 5 minutes after 4.18.0 went out at 22:55.",
                                                         ["a1", "a2"])))
case("field-conclusion", True, draft(A1, conclusion=("HikariPool-1 is exhausted: 493 timeouts since 23:00.", ["a1"])))
case("field-conclusion", False, draft(A1, A2, conclusion=("The pool is exhausted since 23:00 after 4.18.0 caused 37 timeouts.",
                                                          ["a1", "a2"])), "37 never shown")
case("field-conclusion", False, draft(A1, A2, conclusion=("4.18.0 was deployed at 22:55 and caused 493 timeouts.", ["a2"])),
     "493 is in a1's call, but the conclusion rests on a2 only")
case("field-action", True, draft(A1, A2, actions=(("Roll back order-service 4.18.0.", ["a2"]),)))
case("field-action", False, draft(A1, A2, actions=(("Roll back order-service 4.18.0 within 15 minutes.", ["a2"]),)), "15 never shown")
case("field-action", False, draft(A1, A2, actions=(("Roll back to 4.17.1.", ["a2"]),)), "4.17.1 never shown")
case("field-recommendation", True, draft(A1, recs=(("Alert on HikariPool-1 timeouts after 30 s.", ["a1"]),)))
case("field-recommendation", False, draft(A1, recs=(("Alert after 7 timeouts.", ["a1"]),)), "7 never shown")
case("field-recommendation", False, draft(A1, A2, recs=(("Alert on HikariPool-1 timeouts.", ["a2"]),)),
     "HikariPool-1 is not in the deployments call")
case("field-limitations", True, draft(A1, scope="order-service ERROR logs from 22:30 to 23:30"))
case("field-limitations", True, draft(A1, scope="order-service ERROR logs, limit 5 lines", missing=("pool metrics after 23:30",)))
case("field-limitations", True, draft(A1, missing=("the 341 checkout 502s were not read",)), "a run call not cited",
     also=("c_checkout502",))
case("field-limitations", False, draft(A1, scope="order-service ERROR logs from 21:00 to 23:30"), "21:00 is no window of the run")
case("field-limitations", False, draft(A1, missing=("the 12 other services were not queried",)), "12 never shown")
case("field-limitations", False, draft(A1, scope="the last 6 hours of order-service logs"), "no 6-hour window")
case("field-limitations", False, draft(A1, missing=("pool metrics of the 3 replicas",)), "3 only inside timestamps")
# ---- more of the same incident, both ways --------------------------------------------------------------------------
one("count", True, "HikariPool-1 timed out 493 times in the hour.", POOL)
one("count", False, "order-service was OOMKilled x5.", POOL, "5 is the limit and the number of lines shown, not OOM kills")
one("time", True, "One timeout was logged at 23:00:07.", POOL)
one("time", False, "One timeout was logged at 23:00:08.", POOL, "no line at 23:00:08")
one("date", True, "The first timeout was on 2026-11-29 at 23:00.", POOL)
one("date", False, "The first timeout was on 2026-11-29 at 22:00.", POOL, "no line at 22:00")
one("argument-limit", True, "The 5 lines shown are the first of 493.", POOL)
case("field-limitations", True, draft(("Seventeen lines are shown.", ["c_pool17"]), scope="ERROR logs, limit 17 of 493 matches"))
case("field-limitations", False, draft(("Seventeen lines are shown.", ["c_pool17"]), scope="ERROR logs, limit 50"), "limit was 17")
one("number-words", True, "Three deployments are listed, the latest order-service 4.18.0.", ["s_deploys"])
one("number-words", False, "Three pool samples show twenty-one active connections.", ["s_pool"], "20 active, not 21")
one("identifier", False, "Deploy pipeline #4812 shipped 4.18.0.", ["s_deploys"], "the pipeline id was not selected")
one("version", True, "4.18.0 added the Order reconciliation v2 batch job.", ["s_deploys"])
one("percentage", False, "Checkout's 5xx ratio was above 45% for 3m.", ["s_alerts"], "40%, not 45%")
one("duration", False, "The pool was exhausted for 3m.", ["s_pool"], "3m is in the alerts, not in the pool stats")
one("duration", True, "The checkout 5xx alert had held for 3m when it fired at 23:05.", ["s_alerts"])

# ---- citation faults ----------------------------------------------------------------------------------------------
case("citation", False, draft(("HikariPool-1 timed out.", ["call_fabricated"])), "", ["INVOCATION_MISSING"])
case("citation", False, draft(("No OutOfMemoryError lines matched.", ["c_none_oom"])), "NORMAL citing NO_EVIDENCE",
     ["EVIDENCE_KIND_MISMATCH"])
case("citation", False, draft(("HikariPool-1 timed out.", POOL, "NEGATIVE_OBSERVATION")), "negative citing FOUND",
     ["EVIDENCE_KIND_MISMATCH"])
case("citation", False, draft(A1, conclusion=("The pool is exhausted.", ["a9"])), "", ["ANALYSIS_REFERENCE_UNKNOWN"])
case("citation", False, draft(A1, scope=""), "", ["LIMITATIONS_SCOPE_MISSING"])
case("citation", True, draft(("No OutOfMemoryError lines matched for order-service between 22:30 and 23:30.", ["c_none_oom"],
                              "NEGATIVE_OBSERVATION")))

# ---- metrics (query_metrics series) -------------------------------------------------------------------------------
add_metrics_cases(case, draft)


def main() -> None:
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), encoding="utf-8")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
