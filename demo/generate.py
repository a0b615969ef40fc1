"""Deterministic generator of the bundled demo incident: `python demo/generate.py` rewrites demo/data/.

The incident: order-service 4.18.0 is deployed at 22:55Z and enables the order_reconciliation_v2 batch job,
whose slow query holds database connections; from about 23:00Z the HikariCP pool (size 20) is exhausted
("Connection is not available, request timed out after 30000ms", active=20, idle=0, waiting=57),
payment-service sees upstream timeouts, checkout-api returns 5xx from order-service, inventory-service stays
healthy with normal noise, and notification-service never logs the word "timeout".
The demo pins DIAG_CLOCK to DEMO_CLOCK, so the default 60-minute log window is 22:30-23:30Z.
"""

# ruff: noqa: E501 - log messages and seed rows are data; splitting them would hurt readability more than long lines.
from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DEMO_CLOCK = "2026-11-29T23:30:00Z"
DATA = Path(__file__).resolve().parent / "data"
SEED = 20261129
START = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
END = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
DEPLOY = datetime(2026, 11, 29, 22, 55, tzinfo=UTC)
INCIDENT = datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
NOTIFICATION_ABSENT_TERM = "timeout"
"""A word notification-service never logs: exact queries for it there return NO_EVIDENCE."""

Line = tuple[datetime, dict[str, Any]]


def iso(ts: datetime) -> str:
    """Log timestamp format: ISO-8601 UTC with milliseconds and Z."""
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def sql_ts(ts: datetime) -> str:
    """SQLite timestamp format, comparable with DATETIME()."""
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def ticks(rng: random.Random, start: datetime, end: datetime, mean_s: float) -> Iterator[datetime]:
    """Random event times between start and end with the given mean spacing."""
    ts = start + timedelta(seconds=rng.uniform(0, mean_s))
    while ts < end:
        yield ts
        ts += timedelta(seconds=rng.expovariate(1.0 / mean_s))


def line(ts: datetime, service: str, level: str, message: str, **fields: Any) -> Line:
    """One structured log line."""
    return ts, {"timestamp": iso(ts), "service": service, "level": level, "message": message, **fields}


def trace(rng: random.Random) -> str:
    """A random trace id."""
    return f"{rng.getrandbits(64):016x}"


# ---- services -------------------------------------------------------------------------------------------------


def order_service(rng: random.Random) -> list[Line]:
    """order-service: normal traffic, the 4.18.0 deploy, the slow batch query, then pool exhaustion."""
    svc = "order-service"
    out: list[Line] = []
    pods = [f"order-service-7d9f{c}-{rng.randint(10000, 99999)}" for c in "abcdef"]
    for ts in ticks(rng, START, END, 2.2):
        pod = rng.choice(pods)
        version = "4.18.0" if ts >= DEPLOY + timedelta(seconds=45) else "4.17.2"
        if ts >= INCIDENT and rng.random() < 0.62:
            out.append(line(ts, svc, "ERROR", "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
                            logger="com.zaxxer.hikari.pool.HikariPool", pod=pod, version=version, trace_id=trace(rng),
                            exception="java.sql.SQLTransientConnectionException"))
            if rng.random() < 0.5:
                out.append(line(ts + timedelta(milliseconds=3), svc, "ERROR",
                                f"POST /api/orders failed: 503 Service Unavailable (Could not open JDBC Connection for transaction) order_ref=ORD-{rng.randint(100000, 999999)}",
                                logger="c.s.order.api.OrderController", pod=pod, version=version, status=503, duration_ms=30000 + rng.randint(1, 40)))
            continue
        latency = rng.randint(18, 95) if ts < INCIDENT else rng.randint(900, 4200)
        out.append(line(ts, svc, "INFO", f"POST /api/orders 201 Created in {latency}ms", logger="c.s.order.api.OrderController",
                        pod=pod, version=version, status=201, duration_ms=latency, trace_id=trace(rng)))
        if rng.random() < 0.25:
            out.append(line(ts + timedelta(milliseconds=1), svc, "DEBUG", f"Order persisted, items={rng.randint(1, 6)}",
                            logger="c.s.order.repo.OrderRepository", pod=pod))
    for ts in ticks(rng, START, END, 30):
        if ts < INCIDENT - timedelta(minutes=2):
            active, idle, waiting = rng.randint(3, 9), 0, 0
            idle = 20 - active
        elif ts < INCIDENT:
            active, idle, waiting = rng.randint(15, 19), 1, rng.randint(0, 4)
        else:
            active, idle = 20, 0
            waiting = 57 if ts < INCIDENT + timedelta(minutes=10) else rng.randint(48, 71)
        level = "WARN" if waiting else "DEBUG"
        out.append(line(ts, svc, level, f"HikariPool-1 - Pool stats (total=20, active={active}, idle={idle}, waiting={waiting})",
                        logger="com.zaxxer.hikari.pool.HikariPool", pod=rng.choice(pods)))
    deploy_lines = [
        (DEPLOY, "INFO", "Rolling update started: order-service 4.17.2 -> 4.18.0 (replicas=6, maxSurge=1)"),
        (DEPLOY + timedelta(seconds=41), "INFO", "Started OrderServiceApplication in 38.7 seconds (version=4.18.0)"),
        (DEPLOY + timedelta(seconds=44), "INFO", "Feature flag order_reconciliation_v2 is ENABLED"),
        (DEPLOY + timedelta(seconds=46), "INFO", "HikariPool-1 - Start completed. maximumPoolSize=20, connectionTimeout=30000ms"),
        (DEPLOY + timedelta(minutes=3), "INFO", "Batch job order-reconciliation started (chunk=5000, threads=16)"),
    ]
    for ts, level, message in deploy_lines:
        out.append(line(ts, svc, level, message, logger="c.s.order.Bootstrap", pod=pods[0], version="4.18.0"))
    for ts in ticks(rng, DEPLOY + timedelta(minutes=3, seconds=20), END, 55):
        took = rng.randint(28000, 47000)
        out.append(line(ts, svc, "WARN",
                        f"Slow query took {took}ms (order-reconciliation): SELECT o.*, i.* FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.updated_at > ? ORDER BY o.updated_at",
                        logger="c.s.order.batch.ReconciliationJob", pod=pods[0], version="4.18.0", rows_examined=rng.randint(17_000_000, 19_000_000)))
    return out


def payment_service(rng: random.Random) -> list[Line]:
    """payment-service: normal captures, then upstream timeouts to order-service and an open circuit breaker."""
    svc = "payment-service"
    out: list[Line] = []
    upstream_trouble = INCIDENT + timedelta(minutes=1, seconds=10)
    for ts in ticks(rng, START, END, 3.5):
        if ts >= upstream_trouble and rng.random() < 0.45:
            order_ref = f"ORD-{rng.randint(100000, 999999)}"
            out.append(line(ts, svc, "ERROR",
                            f"Upstream timeout: order-service POST /internal/orders/{order_ref}/payment-confirmed did not respond within 5000ms",
                            logger="c.s.payment.client.OrderClient", upstream="order-service", trace_id=trace(rng)))
            if rng.random() < 0.4:
                out.append(line(ts + timedelta(milliseconds=5), svc, "WARN", f"Retrying order-service callback for {order_ref} (attempt 2/3)",
                                logger="c.s.payment.client.OrderClient"))
            continue
        amount = f"{rng.randint(5, 400)}.{rng.randint(0, 99):02d}"
        out.append(line(ts, svc, "INFO", f"Payment captured amount={amount} EUR provider=adyen in {rng.randint(120, 480)}ms",
                        logger="c.s.payment.CaptureService", trace_id=trace(rng)))
    out.append(line(INCIDENT + timedelta(minutes=6, seconds=12), svc, "WARN",
                    "Circuit breaker 'order-service' state changed CLOSED -> OPEN (failure rate 52.4% over 100 calls)",
                    logger="io.github.resilience4j.circuitbreaker"))
    return out


def checkout_api(rng: random.Random) -> list[Line]:
    """checkout-api: 200s, then 502/504 from order-service."""
    svc = "checkout-api"
    out: list[Line] = []
    for ts in ticks(rng, START, END, 2.0):
        if ts >= INCIDENT + timedelta(seconds=30) and rng.random() < 0.55:
            if rng.random() < 0.7:
                msg = f"POST /api/v1/checkout 502 Bad Gateway: upstream order-service responded 503 Service Unavailable (latency_ms={30000 + rng.randint(1, 90)})"
                status = 502
            else:
                msg = "POST /api/v1/checkout 504 Gateway Timeout: upstream order-service did not answer within 30s"
                status = 504
            out.append(line(ts, svc, "ERROR", msg, route="/api/v1/checkout", status=status, upstream="order-service", trace_id=trace(rng)))
            continue
        route = rng.choice(["/api/v1/cart", "/api/v1/cart", "/api/v1/checkout", "/api/v1/shipping-options"])
        out.append(line(ts, svc, "INFO", f"GET {route} 200 OK in {rng.randint(25, 180)}ms", route=route, status=200, trace_id=trace(rng)))
    return out


def inventory_service(rng: random.Random) -> list[Line]:
    """inventory-service: healthy, with normal noise."""
    svc = "inventory-service"
    out: list[Line] = []
    for ts in ticks(rng, START, END, 4.0):
        sku = f"SKU-{rng.randint(1000, 9999)}"
        roll = rng.random()
        if roll < 0.03:
            out.append(line(ts, svc, "WARN", f"Stock level low for {sku}: {rng.randint(1, 4)} units left", logger="c.s.inventory.StockMonitor"))
        elif roll < 0.25:
            out.append(line(ts, svc, "DEBUG", f"Cache hit for {sku}", logger="c.s.inventory.cache.StockCache"))
        else:
            out.append(line(ts, svc, "INFO", f"Reserved {rng.randint(1, 3)} units of {sku} in {rng.randint(4, 30)}ms",
                            logger="c.s.inventory.ReservationService"))
    for ts in ticks(rng, START, END, 300):
        out.append(line(ts, svc, "INFO", f"Cache refresh completed: {rng.randint(11800, 12100)} SKUs in {rng.randint(600, 900)}ms",
                        logger="c.s.inventory.cache.StockCache"))
    return out


def notification_service(rng: random.Random) -> list[Line]:
    """notification-service: e-mails, fewer after 23:00; never logs the word 'timeout'."""
    svc = "notification-service"
    out: list[Line] = []
    for ts in ticks(rng, START, END, 6.0):
        if ts >= INCIDENT and rng.random() < 0.6:
            continue
        template = rng.choice(["order_confirmation", "order_confirmation", "payment_receipt", "shipping_update"])
        out.append(line(ts, svc, "INFO", f"Email sent template={template} in {rng.randint(80, 260)}ms", logger="c.s.notify.Mailer"))
        if rng.random() < 0.05:
            out.append(line(ts + timedelta(milliseconds=2), svc, "WARN", "SMTP relay responded 421, message queued for retry",
                            logger="c.s.notify.Mailer"))
    return out


MALFORMED: dict[str, list[tuple[datetime, str]]] = {
    "order-service": [
        (INCIDENT + timedelta(minutes=4, seconds=2), '{"timestamp": "2026-11-29T23:04:02.118Z", "service": "order-service", "level": "ERROR", "message": "HikariPool-1 - Connection is not availa'),
        (INCIDENT + timedelta(minutes=4, seconds=3), "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)"),
        (INCIDENT + timedelta(minutes=4, seconds=3), "\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:197)"),
    ],
    "payment-service": [
        (INCIDENT + timedelta(minutes=9), '{"timestamp": "2026-11-29T23:09:00.001Z", "service": "payment-service", "level": "ERROR", "message": "Upstream timeout: order-service'),
    ],
    "checkout-api": [(START + timedelta(minutes=12), "GET /healthz 200 (plain-text line from a sidecar)")],
}

SERVICES = {
    "order-service": order_service,
    "payment-service": payment_service,
    "checkout-api": checkout_api,
    "inventory-service": inventory_service,
    "notification-service": notification_service,
}


def write_logs(root: Path, rng: random.Random) -> int:
    """One JSON-lines file per service for the day; returns the number of lines written."""
    if root.exists():
        shutil.rmtree(root)
    total = 0
    for service, build in SERVICES.items():
        lines = sorted(build(rng), key=lambda item: item[0])
        rendered = [(ts, json.dumps(obj, ensure_ascii=False)) for ts, obj in lines]
        rendered += MALFORMED.get(service, [])
        rendered.sort(key=lambda item: item[0])
        folder = root / service
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "2026-11-29.jsonl").write_text("".join(text + "\n" for _, text in rendered), encoding="utf-8")
        total += len(rendered)
    return total


# ---- SQL ------------------------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE orders (id INTEGER PRIMARY KEY, order_ref TEXT NOT NULL UNIQUE, customer_id INTEGER NOT NULL,
  status TEXT NOT NULL, total_amount NUMERIC NOT NULL, currency TEXT NOT NULL DEFAULT 'EUR',
  service_version TEXT NOT NULL, failure_reason TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX idx_orders_created_at ON orders(created_at);
CREATE TABLE payments (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id), amount NUMERIC NOT NULL,
  status TEXT NOT NULL, provider TEXT NOT NULL, latency_ms INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE alerts (id INTEGER PRIMARY KEY, fired_at TEXT NOT NULL, resolved_at TEXT, service TEXT NOT NULL,
  alert_name TEXT NOT NULL, severity TEXT NOT NULL, status TEXT NOT NULL, summary TEXT NOT NULL);
CREATE TABLE incidents (id TEXT PRIMARY KEY, opened_at TEXT NOT NULL, title TEXT NOT NULL, severity TEXT NOT NULL,
  status TEXT NOT NULL, commander TEXT NOT NULL);
CREATE TABLE db_connection_pool_stats (ts TEXT NOT NULL, service TEXT NOT NULL, pool_name TEXT NOT NULL,
  max_size INTEGER NOT NULL, active INTEGER NOT NULL, idle INTEGER NOT NULL, waiting INTEGER NOT NULL,
  timeouts INTEGER NOT NULL, PRIMARY KEY (ts, service, pool_name));
CREATE TABLE feature_flags (name TEXT PRIMARY KEY, enabled INTEGER NOT NULL, updated_at TEXT NOT NULL,
  updated_by TEXT NOT NULL, description TEXT NOT NULL);
CREATE TABLE batch_job_runs (id INTEGER PRIMARY KEY, job_name TEXT NOT NULL, service TEXT NOT NULL, started_at TEXT NOT NULL,
  finished_at TEXT, status TEXT NOT NULL, rows_processed INTEGER NOT NULL, db_connections_held INTEGER NOT NULL);
"""


def _orders_and_payments(db: sqlite3.Connection, rng: random.Random) -> None:
    payment_id = 0
    for order_id, ts in enumerate(ticks(rng, START - timedelta(hours=2), END, 9.0), start=1):
        amount = f"{rng.randint(5, 400)}.{rng.randint(0, 99):02d}"
        version = "4.18.0" if ts >= DEPLOY + timedelta(seconds=45) else "4.17.2"
        failure = None
        if ts >= INCIDENT and rng.random() < 0.68:
            status, failure = "FAILED", "db_connection_timeout"
        elif ts < START - timedelta(minutes=30):
            status = rng.choice(["SHIPPED", "SHIPPED", "PAID", "CANCELLED"]) if rng.random() < 0.97 else "FAILED"
            failure = "payment_declined" if status == "FAILED" else None
        else:
            status = "PAID" if rng.random() < 0.985 else "FAILED"
            failure = "payment_declined" if status == "FAILED" else None
        updated = ts + timedelta(seconds=rng.randint(1, 40) if status != "FAILED" or failure != "db_connection_timeout" else 30)
        db.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?,?)",
            (order_id, f"ORD-{300000 + order_id}", rng.randint(1000, 60000), status, amount, "EUR", version, failure,
             sql_ts(ts), sql_ts(updated)),
        )
        if status in ("PAID", "SHIPPED") or failure == "payment_declined":
            payment_id += 1
            pay_status = "CAPTURED" if failure is None else "DECLINED"
            db.execute("INSERT INTO payments VALUES (?,?,?,?,?,?,?)",
                       (payment_id, order_id, amount, pay_status, rng.choice(["adyen", "adyen", "stripe"]), rng.randint(120, 480),
                        sql_ts(ts + timedelta(seconds=2))))
        elif ts >= INCIDENT and rng.random() < 0.5:
            payment_id += 1
            db.execute("INSERT INTO payments VALUES (?,?,?,?,?,?,?)",
                       (payment_id, order_id, amount, "TIMEOUT", "adyen", 5000, sql_ts(ts + timedelta(seconds=5))))


def _pool_stats(db: sqlite3.Connection, rng: random.Random) -> None:
    minute = START
    while minute < END:
        if minute < INCIDENT - timedelta(minutes=2):
            active, waiting, timeouts = rng.randint(3, 9), 0, 0
        elif minute < INCIDENT:
            active, waiting, timeouts = rng.randint(15, 19), rng.randint(0, 4), 0
        else:
            active = 20
            waiting = 57 if minute < INCIDENT + timedelta(minutes=10) else rng.randint(48, 71)
            timeouts = rng.randint(14, 29)
        db.execute("INSERT INTO db_connection_pool_stats VALUES (?,?,?,?,?,?,?,?)",
                   (sql_ts(minute), "order-service", "HikariPool-1", 20, active, 20 - active, waiting, timeouts))
        pay_active = rng.randint(2, 6)
        db.execute("INSERT INTO db_connection_pool_stats VALUES (?,?,?,?,?,?,?,?)",
                   (sql_ts(minute), "payment-service", "HikariPool-1", 15, pay_active, 15 - pay_active, 0, 0))
        minute += timedelta(minutes=1)


def write_sql(path: Path, rng: random.Random) -> None:
    """The demo shop database (SQLite)."""
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    _orders_and_payments(db, rng)
    _pool_stats(db, rng)
    db.executemany("INSERT INTO deployments VALUES (?,?,?,?,?,?,?)", [
        (1, "inventory-service", "2.7.2", "2026-11-27 10:14:00", "ci-bot (pipeline #4721)", "Dependency updates", "SUCCEEDED"),
        (2, "payment-service", "3.9.0", "2026-11-28 15:02:00", "ci-bot (pipeline #4760)", "Adyen SDK 21.4", "SUCCEEDED"),
        (3, "checkout-api", "5.2.1", "2026-11-28 16:40:00", "maria.lopez", "Shipping options endpoint", "SUCCEEDED"),
        (4, "order-service", "4.17.2", "2026-11-28 11:05:00", "ci-bot (pipeline #4752)", "Fix rounding in order totals", "SUCCEEDED"),
        (5, "inventory-service", "2.7.3", "2026-11-29 21:10:00", "ci-bot (pipeline #4809)", "Cache warm-up tuning", "SUCCEEDED"),
        (6, "order-service", "4.18.0", "2026-11-29 22:55:00", "ci-bot (pipeline #4812)",
         "Order reconciliation v2 batch job (feature flag order_reconciliation_v2)", "SUCCEEDED"),
    ])
    db.executemany("INSERT INTO alerts VALUES (?,?,?,?,?,?,?,?)", [
        (1, "2026-11-29 21:42:00", "2026-11-29 21:47:00", "inventory-service", "InventoryCacheRefreshSlow", "warning", "RESOLVED",
         "Cache refresh took longer than 800ms"),
        (2, "2026-11-29 23:01:30", None, "order-service", "HikariPoolExhausted", "critical", "FIRING",
         "HikariPool-1 active=20 idle=0 waiting=57 for 1m"),
        (3, "2026-11-29 23:03:00", None, "order-service", "OrderServiceHighErrorRate", "critical", "FIRING",
         "5xx ratio above 50% for 2m"),
        (4, "2026-11-29 23:04:00", None, "payment-service", "PaymentUpstreamTimeouts", "warning", "FIRING",
         "Timeouts calling order-service above 20/min"),
        (5, "2026-11-29 23:05:00", None, "checkout-api", "CheckoutHigh5xx", "critical", "FIRING", "Checkout 5xx ratio above 40% for 3m"),
    ])
    db.execute("INSERT INTO incidents VALUES (?,?,?,?,?,?)",
               ("INC-2291", "2026-11-29 23:08:00", "Checkout failures: orders not created", "SEV-2", "OPEN", "on-call: dmitri.k"))
    db.executemany("INSERT INTO feature_flags VALUES (?,?,?,?,?)", [
        ("order_reconciliation_v2", 1, "2026-11-29 22:55:44", "deploy order-service 4.18.0", "Nightly reconciliation batch, new query"),
        ("checkout_express_pay", 1, "2026-11-20 09:00:00", "maria.lopez", "Express pay button on checkout"),
        ("inventory_cache_v3", 0, "2026-11-25 14:30:00", "sam.okafor", "New inventory cache layout"),
        ("payment_retry_backoff", 1, "2026-11-18 12:00:00", "lee.chen", "Exponential backoff for order callbacks"),
    ])
    db.executemany("INSERT INTO batch_job_runs VALUES (?,?,?,?,?,?,?,?)", [
        (1, "order-reconciliation", "order-service", "2026-11-28 23:00:00", "2026-11-28 23:04:12", "SUCCEEDED", 41877, 2),
        (2, "inventory-snapshot", "inventory-service", "2026-11-29 22:00:00", "2026-11-29 22:03:40", "SUCCEEDED", 12034, 1),
        (3, "order-reconciliation", "order-service", "2026-11-29 22:58:00", None, "RUNNING", 18734221, 16),
    ])
    db.commit()
    db.execute("VACUUM")
    db.close()


def main() -> None:
    """Rewrite demo/data/logs, demo/data/shop.db and demo/data/metrics (knowledge runbooks are hand-written files)."""
    from demo.generate_metrics import write_metrics

    rng = random.Random(SEED)
    total = write_logs(DATA / "logs", rng)
    write_sql(DATA / "shop.db", rng)
    samples = write_metrics(DATA / "metrics")  # from the logs and shop.db just written (its own random seed)
    print(f"wrote {total} log lines, shop.db and {samples} metric samples under {DATA} (demo clock {DEMO_CLOCK})")


if __name__ == "__main__":
    main()
