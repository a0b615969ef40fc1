"""Deterministic generator of the agent eval suite: `python eval/agent/make_incidents.py` rewrites eval/agent/NN_*/.

Each incident is a folder (the suite format read by `diagbot eval-agent`, entrypoints/eval_agent_suite.py):

- `incident.json`: the question, the pinned clock, the expected root-cause category, the key facts a correct
  report shows (groups of alternatives, every group must match) and the facts it must not claim;
- `logs/<service>.jsonl`: the log backend's data (demo format: timestamp, service, level, message, fields);
- `db.sql`: the SQL backend's data (SQLite statements, loaded into a fresh database per run);
- `recordings/<name>.json`: recorded model answers (the `reference` recording is written here: the answers an
  attentive engineer-like model gives; live runs add their own with `diagbot eval-agent --live --record NAME`).

Incidents are written in the demo's style: a few services with ordinary noise, one real cause, sometimes a loud
but unrelated signal, a deployments / changes table. Times are UTC; the default log window is the 60 minutes
before the clock.
"""

# ruff: noqa: E501 - log messages, SQL rows and drafts are data.
from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DAY = datetime(2026, 11, 29, tzinfo=UTC)

NOISE = {
    "order-service": ["POST /api/orders 201 Created in {ms}ms", "GET /api/orders/{n} 200 OK in {ms}ms", "Order persisted, items={k}"],
    "payment-service": ["Payment authorised for order {n} in {ms}ms", "Refund check completed in {ms}ms"],
    "checkout-api": ["POST /checkout 200 OK in {ms}ms", "GET /cart 200 OK in {ms}ms"],
    "inventory-service": ["Stock reserved for order {n}", "GET /stock/{n} 200 OK in {ms}ms"],
    "notification-service": ["Email queued for order {n}", "Push sent for order {n}"],
    "product-service": ["GET /products/{n} 200 OK in {ms}ms", "Catalog page rendered in {ms}ms"],
}


@dataclass
class Signal:
    """Lines one service logs between two times, every `every_s` seconds on average."""

    service: str
    level: str
    message: str
    start: str
    end: str
    every_s: float = 30.0


@dataclass
class Incident:
    name: str
    question: str
    clock: str
    category: str
    key_facts: list[list[str]]
    must_not_claim: list[str]
    services: list[str]
    signals: list[Signal]
    sql: str
    reference: list[dict[str, Any]]
    explain: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def at(hhmm: str) -> datetime:
    hours, minutes = hhmm.split(":")[:2]
    seconds = int(hhmm.split(":")[2]) if hhmm.count(":") == 2 else 0
    return DAY.replace(hour=int(hours), minute=int(minutes), second=seconds)


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def ticks(rng: random.Random, start: datetime, end: datetime, mean_s: float) -> Iterator[datetime]:
    ts = start + timedelta(seconds=rng.uniform(0, mean_s))
    while ts < end:
        yield ts
        ts += timedelta(seconds=rng.expovariate(1 / mean_s), milliseconds=rng.randint(0, 999))


def write_logs(folder: Path, incident: Incident, rng: random.Random) -> None:
    clock = datetime.fromisoformat(incident.clock.replace("Z", "+00:00"))
    lines: dict[str, list[tuple[datetime, dict[str, Any]]]] = {s: [] for s in incident.services}
    for service in incident.services:
        for ts in ticks(rng, clock - timedelta(minutes=90), clock, 75.0):
            template = rng.choice(NOISE[service])
            message = template.format(ms=rng.randint(8, 90), n=rng.randint(10000, 99999), k=rng.randint(1, 6))
            lines[service].append((ts, {"level": "INFO", "message": message}))
    for signal in incident.signals:
        for ts in ticks(rng, at(signal.start), at(signal.end), signal.every_s):
            lines[signal.service].append((ts, {"level": signal.level, "message": signal.message}))
    (folder / "logs").mkdir(parents=True)
    for service, entries in lines.items():
        with (folder / "logs" / f"{service}.jsonl").open("w", encoding="utf-8") as out:
            for ts, entry in sorted(entries, key=lambda e: e[0]):
                record = {"timestamp": iso(ts), "service": service, "level": entry["level"], "message": entry["message"]}
                out.write(json.dumps(record) + "\n")


DEPLOYMENTS = """CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
"""
CHANGES = """CREATE TABLE changes (id INTEGER PRIMARY KEY, service TEXT NOT NULL, kind TEXT NOT NULL, changed_at TEXT NOT NULL,
  changed_by TEXT NOT NULL, summary TEXT NOT NULL);
"""


def deploy(i: int, service: str, version: str, when: str, summary: str, who: str = "ci-bot") -> str:
    return (f"INSERT INTO deployments VALUES ({i}, '{service}', '{version}', '2026-11-29 {when}:00', '{who}', "
            f"'{summary}', 'succeeded');\n")


def change(i: int, service: str, kind: str, when: str, summary: str, who: str = "ops") -> str:
    return f"INSERT INTO changes VALUES ({i}, '{service}', '{kind}', '2026-11-29 {when}:00', '{who}', '{summary}');\n"


def logs_call(service: str, query: str, level: str | None = "ERROR", **extra: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {"service": service, "query": query, **extra}
    if level:
        arguments["level"] = level
    return {"name": "query_logs", "arguments": arguments}


def sql_call(sql: str) -> dict[str, Any]:
    return {"name": "query_mysql", "arguments": {"sql": sql}}


def reference(calls: list[dict[str, Any]], analyses: list[tuple[str, list[int]]], conclusion: str | None,
              scope: str, missing: list[str], actions: list[str] = ()) -> list[dict[str, Any]]:
    """The recorded answers of a careful model: the router, one step of calls, the draft, the reviewer."""
    analysis = [{"analysis_id": f"a{i}", "kind": "NEGATIVE_OBSERVATION" if "matched nothing" in text else "NORMAL",
                 "text": text, "tool_call_ids": [f"{{{{call:{n}}}}}" for n in cites]}
                for i, (text, cites) in enumerate(analyses, start=1)]
    ids = [a["analysis_id"] for a in analysis]
    draft = {
        "conclusion": {"text": conclusion, "based_on_analysis_ids": ids} if conclusion else None,
        "analysis": analysis,
        "action_plan": [{"action": a, "based_on_analysis_ids": ids, "requires_human_confirmation": True} for a in actions],
        "recommendations": [],
        "limitations": {"scope": scope, "missing_info": missing},
    }
    return [
        {"content": '{"intent": "DIAGNOSIS"}'},
        {"tool_calls": [{"id": f"call_ref_{n}", **c} for n, c in enumerate(calls, start=1)]},
        {"tool_calls": [{"id": "call_ref_submit", "name": "submit_diagnosis_draft", "arguments": draft}]},
        {"content": '{"verdict": "SUPPORTED", "reason": "every analysis quotes its cited evidence and the conclusion follows from them"}'},
    ]


# ---- the incidents -----------------------------------------------------------------------------------------------

LATEST_DEPLOYS = "SELECT service, version, deployed_at, change_summary FROM deployments ORDER BY deployed_at DESC LIMIT 5"
LATEST_CHANGES = "SELECT service, kind, changed_at, summary FROM changes ORDER BY changed_at DESC LIMIT 5"


def INCIDENTS() -> list[Incident]:
    return [pool(), deploy_regression(), memory(), disk(), dependency_timeout(), red_herring(), healthy(), recovered(),
            lock_wait(), rate_limited(), config_error(), dns(), thread_pool(), cache_eviction()]


def pool() -> Incident:
    msg = "HikariPool-1 - Connection is not available, request timed out after 30000ms (total=20, active=20, idle=0, waiting=41)"
    sql = DEPLOYMENTS + deploy(1, "order-service", "4.17.2", "18:20", "Checkout copy changes") + deploy(
        2, "order-service", "4.18.0", "22:55", "Order reconciliation v2 batch job holding a transaction per batch") + deploy(
        3, "payment-service", "3.4.1", "20:05", "Provider SDK bump")
    return Incident(
        "01_connection_pool", "why is order-service failing since 23:00?", "2026-11-29T23:30:00Z", "connection_pool",
        [["hikaripool", "connection pool", "connection is not available"], ["4.18.0", "reconciliation"]],
        ["out of memory", "outofmemory", "disk", "certificate", "dns"],
        ["order-service", "payment-service", "checkout-api"],
        [Signal("order-service", "ERROR", msg, "23:00", "23:30", 12),
         Signal("checkout-api", "ERROR", "POST /checkout 503 Service Unavailable: upstream order-service timed out", "23:01", "23:30", 40)],
        sql,
        reference([logs_call("order-service", "Connection is not available"), sql_call(LATEST_DEPLOYS)],
                  [(f"order-service logs '{msg}' at ERROR level.", [1]),
                   ("The latest deployment is order-service 4.18.0: 'Order reconciliation v2 batch job holding a transaction per batch'.", [2])],
                  "order-service's HikariCP pool (HikariPool-1) is exhausted, after order-service 4.18.0 added the reconciliation v2 batch job.",
                  "order-service ERROR logs in the last hour and the deployments table.", ["Pool metrics were not queried."],
                  ["Decide whether to roll back order-service 4.18.0."]),
        explain="The demo's incident: a deploy's batch job holds connections and the pool is exhausted.")


def deploy_regression() -> Incident:
    msg = "java.lang.NullPointerException: Cannot invoke \"java.util.Locale.getCountry()\" because \"locale\" is null at PriceFormatter.format(PriceFormatter.java:41)"
    logged = msg.replace('\\"', '"')
    sql = DEPLOYMENTS + deploy(1, "checkout-api", "2.8.4", "09:12", "Basket badge colour") + deploy(
        2, "checkout-api", "2.9.0", "14:10", "Localised price formatting") + deploy(3, "inventory-service", "5.1.0", "11:40", "Stock cache warmup")
    return Incident(
        "02_deploy_regression", "checkout-api is returning 500s, what happened?", "2026-11-29T14:45:00Z", "deploy_regression",
        [["nullpointerexception", "priceformatter"], ["2.9.0"]], ["connection pool", "memory", "disk", "timeout"],
        ["checkout-api", "inventory-service", "payment-service"],
        [Signal("checkout-api", "ERROR", logged, "14:11", "14:45", 15),
         Signal("checkout-api", "WARN", "POST /checkout 500 Internal Server Error in 4ms", "14:11", "14:45", 15)],
        sql,
        reference([logs_call("checkout-api", "NullPointerException"), sql_call(LATEST_DEPLOYS)],
                  [(f"checkout-api logs '{logged}' at ERROR level.", [1]),
                   ("The latest deployment is checkout-api 2.9.0: 'Localised price formatting'.", [2])],
                  "checkout-api 2.9.0 ('Localised price formatting') throws a NullPointerException in PriceFormatter.format.",
                  "checkout-api ERROR logs in the last hour and the deployments table.", ["Request payloads were not inspected."],
                  ["Decide whether to roll back checkout-api 2.9.0."]),
        extra={"quoted_message": logged})


def memory() -> Incident:
    oom = "java.lang.OutOfMemoryError: Java heap space at com.shop.inventory.ReportExporter.buildSnapshot(ReportExporter.java:88)"
    sql = DEPLOYMENTS + deploy(1, "inventory-service", "5.2.0", "02:30", "Nightly stock report export") + deploy(2, "order-service", "4.18.1", "01:00", "Logging tweaks")
    return Incident(
        "03_memory", "inventory-service keeps restarting, why?", "2026-11-29T03:20:00Z", "memory",
        [["outofmemoryerror", "java heap space", "heap"]], ["connection pool", "disk", "certificate", "dns"],
        ["inventory-service", "order-service"],
        [Signal("inventory-service", "ERROR", oom, "02:40", "03:20", 90),
         Signal("inventory-service", "WARN", "Container inventory-service was OOMKilled (exit code 137), restarting", "02:41", "03:20", 90)],
        sql,
        reference([logs_call("inventory-service", "OutOfMemoryError"), logs_call("inventory-service", "OOMKilled", "WARN")],
                  [(f"inventory-service logs '{oom}' at ERROR level.", [1]),
                   ("inventory-service logs 'Container inventory-service was OOMKilled (exit code 137), restarting' at WARN level.", [2])],
                  "inventory-service runs out of Java heap in ReportExporter.buildSnapshot and is OOMKilled and restarted.",
                  "inventory-service ERROR and WARN logs in the last hour.", ["Heap size settings and the deployment history were not checked."]),
    )


def disk() -> Incident:
    msg = "Failed to write spool file /var/spool/notify/batch-7781.json: No space left on device"
    sql = DEPLOYMENTS + deploy(1, "notification-service", "1.12.0", "06:00", "Template cache")
    return Incident(
        "04_disk", "notification-service stopped sending emails, can you check?", "2026-11-29T10:15:00Z", "disk",
        [["no space left on device", "disk"]], ["memory", "connection pool", "certificate", "rate limit"],
        ["notification-service", "order-service"],
        [Signal("notification-service", "ERROR", msg, "09:40", "10:15", 20),
         Signal("notification-service", "WARN", "Disk usage of /var/spool is 100%", "09:38", "10:15", 120)],
        sql,
        reference([logs_call("notification-service", "No space left on device")],
                  [(f"notification-service logs '{msg}' at ERROR level.", [1])],
                  "notification-service cannot write its spool files because /var/spool has no space left on the device.",
                  "notification-service ERROR logs in the last hour.", ["What filled the disk was not queried."]))


def dependency_timeout() -> Incident:
    msg = "Call to provider stripe-gateway failed: Read timed out after 10000ms (POST /v1/charges)"
    sql = DEPLOYMENTS + deploy(1, "payment-service", "3.4.1", "08:05", "Provider SDK bump") + (
        "CREATE TABLE payments (id INTEGER PRIMARY KEY, provider TEXT, status TEXT, latency_ms INTEGER, created_at TEXT);\n"
        + "".join(f"INSERT INTO payments VALUES ({i}, 'stripe-gateway', '{'timeout' if i > 6 else 'ok'}', {10000 if i > 6 else 180 + i}, '2026-11-29 16:{10 + i}:00');\n" for i in range(1, 13)))
    return Incident(
        "05_dependency_timeout", "payments are failing at checkout, why?", "2026-11-29T16:40:00Z", "dependency_timeout",
        [["stripe-gateway", "provider"], ["timed out", "timeout"]], ["connection pool", "memory", "disk", "sdk bump", "roll back"],
        ["payment-service", "checkout-api"],
        [Signal("payment-service", "ERROR", msg, "16:15", "16:40", 15),
         Signal("checkout-api", "ERROR", "POST /checkout 502 Bad Gateway: payment-service answered 504", "16:16", "16:40", 30)],
        sql,
        reference([logs_call("payment-service", "Read timed out"), sql_call("SELECT provider, status, COUNT(*) AS n FROM payments GROUP BY provider, status")],
                  [(f"payment-service logs '{msg}' at ERROR level.", [1]),
                   ("The payments table shows stripe-gateway payments with status 'timeout'.", [2])],
                  "Payments fail because calls to the provider stripe-gateway time out.",
                  "payment-service ERROR logs in the last hour and the payments table.", ["The provider's status page was not checked."]))


def red_herring() -> Incident:
    cert = "SSL handshake with inventory-service.internal:8443 failed: PKIX path validation failed: certificate expired on 2026-11-29T12:00:00Z"
    sql = DEPLOYMENTS + deploy(1, "checkout-api", "2.8.4", "09:12", "Basket badge colour") + CHANGES + change(
        1, "inventory-service", "certificate", "12:00", "TLS certificate issued for 30 days")
    return Incident(
        "06_red_herring", "checkout-api errors since noon, what is going on?", "2026-11-29T12:40:00Z", "certificate",
        [["certificate expired", "certificate", "pkix"]], ["disk", "deprecated", "memory", "connection pool"],
        ["checkout-api", "inventory-service", "order-service"],
        [Signal("checkout-api", "ERROR", cert, "12:00", "12:40", 20),
         Signal("checkout-api", "WARN", "Config key 'cache.ttl' is deprecated, use 'cache.ttl_seconds'", "11:10", "12:40", 60),
         Signal("order-service", "WARN", "Disk usage of /data is 81%", "11:10", "12:40", 300)],
        sql,
        reference([logs_call("checkout-api", "certificate expired")],
                  [(f"checkout-api logs '{cert}' at ERROR level.", [1])],
                  "checkout-api cannot call inventory-service because inventory-service's TLS certificate expired.",
                  "checkout-api ERROR logs in the last hour.", ["The certificate itself was not inspected."]),
        explain="Loud but unrelated warnings (a deprecated config key, disk at 81 % on another service) beside the real cause.")


def healthy() -> Incident:
    sql = DEPLOYMENTS + deploy(1, "order-service", "4.18.0", "07:55", "Order reconciliation v2")
    return Incident(
        "07_healthy", "is order-service ok right now? someone said it was slow", "2026-11-29T09:30:00Z", "none",
        [], ["exhausted", "outofmemory", "out of memory", "no space left", "root cause", "timed out"],
        ["order-service", "payment-service"], [], sql,
        reference([logs_call("order-service", "error", None), logs_call("order-service", "timeout", "ERROR")],
                  [("The search for 'error' in order-service's logs of the last hour matched nothing.", [1]),
                   ("The search for 'timeout' at ERROR level in order-service's logs of the last hour matched nothing.", [2])],
                  None, "Exact searches of order-service logs in the last hour.",
                  ["Latency metrics were not queried, so slowness was neither shown nor excluded."]),
        explain="Nothing is wrong: the only honest report is observations, no cause.")


def recovered() -> Incident:
    down = "Redis connection to redis-payments:6379 refused: Connection refused"
    back = "Reconnected to redis-payments:6379 after 7 attempts"
    sql = DEPLOYMENTS + deploy(1, "payment-service", "3.4.1", "18:05", "Provider SDK bump") + CHANGES + change(1, "payment-service", "infrastructure", "21:04", "redis-payments failover to replica")
    return Incident(
        "08_recovered", "payment-service alerted around 21:05, is it still a problem?", "2026-11-29T21:40:00Z", "recovered",
        [["redis"], ["reconnected", "recovered"]], ["memory", "disk", "connection pool", "certificate"],
        ["payment-service", "checkout-api"],
        [Signal("payment-service", "ERROR", down, "21:05", "21:12", 10),
         Signal("payment-service", "INFO", back, "21:12:30", "21:12:45", 4)],
        sql,
        reference([logs_call("payment-service", "Connection refused"), logs_call("payment-service", "Reconnected", "INFO"), sql_call(LATEST_CHANGES)],
                  [(f"payment-service logged '{down}' at ERROR level.", [1]),
                   (f"payment-service then logged '{back}'.", [2]),
                   ("The changes table records 'redis-payments failover to replica' for payment-service.", [3])],
                  "payment-service lost its Redis connection during the redis-payments failover and reconnected afterwards.",
                  "payment-service logs in the last hour and the changes table.", ["Whether errors recur after the reconnect was not watched over time."]))


def lock_wait() -> Incident:
    msg = "SQLTransactionRollbackException: Lock wait timeout exceeded; try restarting transaction (UPDATE orders SET status=?)"
    sql = DEPLOYMENTS + deploy(1, "order-service", "4.18.0", "01:10", "Order reconciliation v2") + CHANGES + change(
        1, "order-service", "schema_migration", "04:02", "ALTER TABLE orders ADD COLUMN fulfilment_region (online DDL)", "dba")
    return Incident(
        "09_lock_wait", "order-service updates are failing, why?", "2026-11-29T04:40:00Z", "lock_contention",
        [["lock wait timeout"], ["alter table", "migration"]], ["memory", "disk", "hikaripool", "certificate"],
        ["order-service", "payment-service"],
        [Signal("order-service", "ERROR", msg, "04:03", "04:40", 15)],
        sql,
        reference([logs_call("order-service", "Lock wait timeout"), sql_call(LATEST_CHANGES)],
                  [(f"order-service logs '{msg}' at ERROR level.", [1]),
                   ("The changes table records a schema_migration on order-service: 'ALTER TABLE orders ADD COLUMN fulfilment_region (online DDL)'.", [2])],
                  "order-service updates of orders hit lock wait timeouts while the ALTER TABLE orders migration runs.",
                  "order-service ERROR logs in the last hour and the changes table.", ["The database's lock tables were not queried."]))


def rate_limited() -> Incident:
    msg = "Email provider sendgrid answered 429 Too Many Requests (rate limit exceeded), message deferred"
    sql = DEPLOYMENTS + deploy(1, "notification-service", "1.12.0", "06:00", "Template cache") + CHANGES + change(
        1, "notification-service", "feature_flag", "17:00", "black_friday_campaign enabled: 40k marketing emails", "marketing")
    return Incident(
        "10_rate_limited", "order confirmation emails are delayed, why?", "2026-11-29T17:35:00Z", "rate_limit",
        [["429", "too many requests", "rate limit"]], ["memory", "disk", "connection pool", "certificate"],
        ["notification-service", "order-service"],
        [Signal("notification-service", "WARN", msg, "17:02", "17:35", 8)],
        sql,
        reference([logs_call("notification-service", "429", "WARN"), sql_call(LATEST_CHANGES)],
                  [(f"notification-service logs '{msg}' at WARN level.", [1]),
                   ("The changes table records for notification-service: 'black_friday_campaign enabled: 40k marketing emails'.", [2])],
                  "Emails are deferred because sendgrid rate-limits notification-service (Too Many Requests) since the black_friday_campaign was enabled.",
                  "notification-service WARN logs in the last hour and the changes table.", ["The provider's quota was not checked."]))


def config_error() -> Incident:
    msg = "Application startup failed: missing required configuration PAYMENT_API_URL"
    sql = DEPLOYMENTS + deploy(1, "checkout-api", "2.9.1", "13:00", "Price formatting fix") + CHANGES + change(
        1, "checkout-api", "config", "15:20", "Secrets moved to vault path checkout/prod; PAYMENT_API_URL not migrated")
    return Incident(
        "11_config_error", "checkout-api pods are crash looping", "2026-11-29T15:50:00Z", "configuration",
        [["payment_api_url", "missing required configuration"]], ["memory", "disk", "connection pool", "price formatting", "roll back"],
        ["checkout-api", "order-service"],
        [Signal("checkout-api", "ERROR", msg, "15:21", "15:50", 45)],
        sql,
        reference([logs_call("checkout-api", "startup failed"), sql_call(LATEST_CHANGES)],
                  [(f"checkout-api logs '{msg}' at ERROR level.", [1]),
                   ("The changes table records a config change on checkout-api: 'Secrets moved to vault path checkout/prod; PAYMENT_API_URL not migrated'.", [2])],
                  "checkout-api fails at startup because PAYMENT_API_URL was not migrated when its secrets moved to the vault.",
                  "checkout-api ERROR logs in the last hour and the changes table.", []))


def dns() -> Incident:
    msg = "java.net.UnknownHostException: catalog-db.internal: Name or service not known"
    sql = DEPLOYMENTS + deploy(1, "inventory-service", "5.1.0", "05:40", "Stock cache warmup") + CHANGES + change(
        1, "platform", "dns", "08:10", "Internal zone migrated to new resolver; catalog-db.internal record pending")
    return Incident(
        "12_dns", "inventory-service cannot reach its database since about 8", "2026-11-29T08:45:00Z", "dns",
        [["unknownhostexception", "dns", "name or service not known"]], ["memory", "disk", "connection pool exhausted", "certificate"],
        ["inventory-service", "order-service"],
        [Signal("inventory-service", "ERROR", msg, "08:11", "08:45", 20)],
        sql,
        reference([logs_call("inventory-service", "UnknownHostException"), sql_call(LATEST_CHANGES)],
                  [(f"inventory-service logs '{msg}' at ERROR level.", [1]),
                   ("The changes table records a dns change: 'Internal zone migrated to new resolver; catalog-db.internal record pending'.", [2])],
                  "inventory-service cannot resolve catalog-db.internal since the internal DNS zone moved to a new resolver.",
                  "inventory-service ERROR logs in the last hour and the changes table.", []))


def thread_pool() -> Incident:
    msg = "RejectedExecutionException: Task rejected from ThreadPoolExecutor[pool size = 64, active threads = 64, queued tasks = 500]"
    sql = DEPLOYMENTS + deploy(1, "order-service", "4.19.0", "19:30", "Synchronous fraud check on every order") + deploy(2, "payment-service", "3.4.1", "12:05", "Provider SDK bump")
    return Incident(
        "13_thread_pool", "order-service is rejecting requests, please look", "2026-11-29T20:10:00Z", "thread_pool",
        [["rejectedexecution", "threadpoolexecutor", "thread pool"]], ["memory", "disk", "hikaripool", "certificate"],
        ["order-service", "payment-service"],
        [Signal("order-service", "ERROR", msg, "19:35", "20:10", 15)],
        sql,
        reference([logs_call("order-service", "RejectedExecutionException"), sql_call(LATEST_DEPLOYS)],
                  [(f"order-service logs '{msg}' at ERROR level.", [1]),
                   ("The latest deployment is order-service 4.19.0: 'Synchronous fraud check on every order'.", [2])],
                  "order-service's request thread pool is saturated after 4.19.0 made the fraud check synchronous.",
                  "order-service ERROR logs in the last hour and the deployments table.", ["Thread dumps were not taken."],
                  ["Decide whether to roll back order-service 4.19.0."]))


def cache_eviction() -> Incident:
    msg = "Redis error: OOM command not allowed when used memory > 'maxmemory' (SET product:*)"
    sql = DEPLOYMENTS + deploy(1, "product-service", "7.0.2", "09:00", "Image URLs in product cache entries")
    return Incident(
        "14_cache_maxmemory", "product pages are slow, what is wrong?", "2026-11-29T11:00:00Z", "cache",
        [["maxmemory", "redis"]], ["disk", "connection pool", "certificate", "java heap"],
        ["product-service", "order-service"],
        [Signal("product-service", "WARN", msg, "10:20", "11:00", 10),
         Signal("product-service", "INFO", "Cache miss for product page, rendered from database in 2300ms", "10:20", "11:00", 10)],
        sql,
        reference([logs_call("product-service", "maxmemory", "WARN"), sql_call(LATEST_DEPLOYS)],
                  [(f"product-service logs '{msg}' at WARN level.", [1]),
                   ("The latest deployment is product-service 7.0.2: 'Image URLs in product cache entries'.", [2])],
                  "product-service's Redis cache is at maxmemory and refuses writes, so product pages are rendered from the database.",
                  "product-service WARN logs in the last hour and the deployments table.", ["Redis memory metrics were not queried."]))


def chronological(sql: str) -> str:
    """Each table's rows numbered in time order (ids grow with time, as in a real table)."""
    out, rows = [], {}
    for line in sql.splitlines(keepends=True):
        match = re.match(r"INSERT INTO (\w+) VALUES \((\d+), (.*)\);\n?$", line)
        if match and match.group(1) in ("deployments", "changes"):
            rows.setdefault(match.group(1), []).append(match.group(3))
            out.append(f"@@{match.group(1)}@@")
        else:
            out.append(line)
    ordered = {t: iter(sorted(r, key=lambda v: re.findall(r"'2026-[^']*'", v)[0])) for t, r in rows.items()}
    counters = dict.fromkeys(rows, 0)
    text = []
    for line in out:
        if line.startswith("@@"):
            table = line.strip("@")
            counters[table] += 1
            text.append(f"INSERT INTO {table} VALUES ({counters[table]}, {next(ordered[table])});\n")
        else:
            text.append(line)
    return "".join(text)


def main() -> None:
    for incident in INCIDENTS():
        folder = HERE / incident.name
        recordings = folder / "recordings"
        kept = {p.name: p.read_text() for p in recordings.glob("*.json") if p.name != "reference.json"} if recordings.exists() else {}
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        rng = random.Random(incident.name)
        write_logs(folder, incident, rng)
        (folder / "db.sql").write_text(chronological(incident.sql), encoding="utf-8")
        spec = {"question": incident.question, "clock": incident.clock, "category": incident.category,
                "key_facts": incident.key_facts, "must_not_claim": incident.must_not_claim, "explain": incident.explain,
                **incident.extra}
        (folder / "incident.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        recordings.mkdir()
        ref = {"model": "reference", "server": "recorded by hand: the answers of a careful model", "first_look": False,
               "expect": "correct", "responses": incident.reference}
        (recordings / "reference.json").write_text(json.dumps(ref, indent=1) + "\n", encoding="utf-8")
        for name, text in kept.items():
            (recordings / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(INCIDENTS())} incidents under {HERE}")

if __name__ == "__main__":
    main()
