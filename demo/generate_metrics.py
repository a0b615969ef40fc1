"""The demo incident's metrics, derived from its logs and database so the three sources tell one story:
`python demo/generate.py` (after the logs and shop.db) writes demo/data/metrics/*.om.

Every 15 s from 22:00Z to 23:29:45Z (a Prometheus scrape interval), OpenMetrics with a timestamp on every sample:

- order-service.om / payment-service.om: the HikariCP pool (`hikaricp_connections_active`, `_idle`, `_pending`,
  `_max`, `hikaricp_pool_usage_ratio`, `hikaricp_connections_timeout_total`), each minute's values taken from the
  `db_connection_pool_stats` table;
- checkout-api.om / order-service.om / inventory-service.om: requests by status (`http_server_requests_total`),
  the 5xx share over the last minute (`http_server_requests_error_ratio`) and latency quantiles over the last
  minute (`http_server_requests_seconds{quantile=...}`), counted from the log lines;
- shop-db.om: the database (`mysql_global_status_threads_connected`, `_threads_running`,
  `mysql_global_variables_max_connections`, `instance:node_cpu_utilisation:ratio`), busy from the reconciliation
  batch job's start (22:58Z) on;
- `up` for every target.

The files also load into Prometheus: `promtool tsdb create-blocks-from openmetrics FILE DIR` (tests do).
"""

# ruff: noqa: E501 - metric help texts are data.
from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SEED = 20261130
START = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
END = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
BATCH_START = datetime(2026, 11, 29, 22, 58, tzinfo=UTC)
SCRAPE_S = 15
WINDOW_S = 60.0
QUANTILES = ("0.5", "0.9", "0.99")
_MS = re.compile(r"in (\d+)ms|latency_ms=(\d+)")


@dataclass(frozen=True)
class Request:
    at: float
    status: int
    seconds: float


def scrapes() -> Iterator[int]:
    """Scrape times (unix seconds) from START to END, END excluded."""
    t = int(START.timestamp())
    while t < END.timestamp():
        yield t
        t += SCRAPE_S


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _lines(service: str) -> Iterator[dict[str, object]]:
    for path in sorted((DATA / "logs" / service).glob("*.jsonl")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and "timestamp" in obj:
                yield obj


def _duration(message: str, default_ms: float) -> float:
    found = _MS.search(message)
    return (float(found.group(1) or found.group(2)) if found else default_ms) / 1000.0


def requests(service: str) -> list[Request]:
    """The service's requests as its logs show them (time, HTTP status, duration)."""
    out: list[Request] = []
    for obj in _lines(service):
        message, status = str(obj.get("message", "")), obj.get("status")
        at = _when(str(obj["timestamp"]))
        if service == "checkout-api" and isinstance(status, int):
            out.append(Request(at, status, _duration(message, 30_000)))
        elif service == "order-service" and message.startswith("POST /api/orders 201"):
            out.append(Request(at, 201, float(obj.get("duration_ms", 0)) / 1000.0))  # type: ignore[arg-type]
        elif service == "order-service" and "Connection is not available" in message and obj.get("level") == "ERROR":
            out.append(Request(at, 503, 30.0 + (at % 1) * 0.04))
        elif service == "inventory-service" and message.startswith("Reserved "):
            out.append(Request(at, 200, _duration(message, 10)))
    out.sort(key=lambda r: r.at)
    return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _labels(pairs: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs.items()) + "}"


@dataclass
class Family:
    """One metric family of a file: TYPE/UNIT/HELP and its sample lines in order."""

    name: str
    type: str
    help: str
    unit: str = ""
    lines: list[str] = field(default_factory=list)

    def sample(self, name: str, labels: dict[str, str], value: float, t: int) -> None:
        self.lines.append(f"{name}{_labels(labels)} {_num(value)} {t}")

    def render(self) -> str:
        head = [f"# TYPE {self.name} {self.type}"]
        if self.unit:
            head.append(f"# UNIT {self.name} {self.unit}")
        head.append(f"# HELP {self.name} {self.help}")
        return "\n".join(head + self.lines)


def http_families(service: str) -> list[Family]:
    """Requests by status, the last minute's 5xx share and latency quantiles, from the service's log lines."""
    reqs = requests(service)
    times = [r.at for r in reqs]
    total = Family("http_server_requests", "counter", "HTTP server requests by status code.")
    ratio = Family("http_server_requests_error_ratio", "gauge", "Share of requests answered 5xx over the last minute.", "ratio")
    # Quantiles as a gauge family: prometheus_client's OpenMetrics parser keeps only one sample per timestamp of a
    # timestamped summary's group (its duplicate check is not reset per timestamp), so a summary would lose points.
    latency = Family("http_server_requests_seconds", "gauge", "HTTP server request duration quantiles over the last minute.", "seconds")
    statuses = sorted({r.status for r in reqs})
    base = {"service": service}
    for status in statuses:
        for t in scrapes():
            count = bisect_right(times, t)
            done = sum(1 for r in reqs[:count] if r.status == status)
            total.sample("http_server_requests_total", {**base, "status": str(status)}, done, t)
    for t in scrapes():
        lo, hi = bisect_left(times, t - WINDOW_S), bisect_right(times, t)
        recent = reqs[lo:hi]
        errors = sum(1 for r in recent if r.status >= 500)
        ratio.sample(ratio.name, base, round(errors / len(recent), 4) if recent else 0.0, t)
    for q in QUANTILES:
        carried = 0.0
        for t in scrapes():
            lo, hi = bisect_left(times, t - WINDOW_S), bisect_right(times, t)
            durations = [r.seconds for r in reqs[lo:hi]]
            if durations:
                carried = round(_quantile(durations, float(q)), 3)
            latency.sample(latency.name, {**base, "quantile": q}, carried, t)
    return [total, ratio, latency]


def pool_families(db: sqlite3.Connection, service: str) -> list[Family]:
    """The HikariCP pool of a service, each minute's row of db_connection_pool_stats repeated at its scrapes."""
    rows = db.execute("SELECT ts, pool_name, max_size, active, idle, waiting, timeouts FROM db_connection_pool_stats "
                      "WHERE service = ? ORDER BY ts", (service,)).fetchall()
    by_minute = {_when(ts.replace(" ", "T") + "Z"): row for ts, *row in rows}
    active = Family("hikaricp_connections_active", "gauge", "Active connections of the pool.")
    idle = Family("hikaricp_connections_idle", "gauge", "Idle connections of the pool.")
    pending = Family("hikaricp_connections_pending", "gauge", "Threads waiting for a connection.")
    maximum = Family("hikaricp_connections_max", "gauge", "Maximum size of the pool.")
    usage = Family("hikaricp_pool_usage_ratio", "gauge", "Active connections over the pool's maximum size.", "ratio")
    timeouts = Family("hikaricp_connections_timeout", "counter", "Connection requests that timed out.")
    timed_out = 0.0
    for t in scrapes():
        minute = t - t % 60
        pool, size, act, idl, wait, per_minute = by_minute[minute]
        labels = {"service": service, "pool": pool}
        timed_out += per_minute / (60 / SCRAPE_S)
        active.sample(active.name, labels, act, t)
        idle.sample(idle.name, labels, idl, t)
        pending.sample(pending.name, labels, wait, t)
        maximum.sample(maximum.name, labels, size, t)
        usage.sample(usage.name, labels, round(act / size, 4), t)
        timeouts.sample("hikaricp_connections_timeout_total", labels, round(timed_out), t)
    return [active, idle, pending, maximum, usage, timeouts]


def db_families(db: sqlite3.Connection, rng: random.Random) -> list[Family]:
    """The database server: connections, running threads and CPU, busy once the batch job holds connections."""
    rows = db.execute("SELECT ts, SUM(active) FROM db_connection_pool_stats GROUP BY ts ORDER BY ts").fetchall()
    busy_by_minute = {_when(ts.replace(" ", "T") + "Z"): int(active) for ts, active in rows}
    labels = {"instance": "shop-db:3306", "job": "mysqld"}
    connected = Family("mysql_global_status_threads_connected", "gauge", "Open client connections.")
    running = Family("mysql_global_status_threads_running", "gauge", "Client threads running a statement.")
    maximum = Family("mysql_global_variables_max_connections", "gauge", "The max_connections setting.")
    cpu = Family("instance:node_cpu_utilisation:ratio", "gauge", "Share of CPU time busy on the database host (recording rule over node_cpu_seconds_total).")
    node = {"instance": "shop-db"}
    batch = BATCH_START.timestamp()
    for t in scrapes():
        busy = busy_by_minute[t - t % 60]
        connected.sample(connected.name, labels, 20 + 15 + 6 + rng.randint(0, 2), t)
        running.sample(running.name, labels, busy + rng.randint(0, 2) + (1 if t >= batch else 0), t)
        maximum.sample(maximum.name, labels, 151, t)
        share = rng.uniform(0.91, 0.97) if t >= batch else rng.uniform(0.18, 0.26)
        cpu.sample(cpu.name, node, round(share, 3), t)
    return [connected, running, maximum, cpu]


def up_family(targets: Iterable[tuple[str, str]]) -> Family:
    up = Family("up", "gauge", "Whether the target answered its last scrape.")
    for job, instance in targets:
        for t in scrapes():
            up.sample("up", {"job": job, "instance": instance}, 1, t)
    return up


def render(families: Iterable[Family]) -> str:
    return "\n".join(f.render() for f in families) + "\n# EOF\n"


def write_metrics(root: Path) -> int:
    """Rewrite root/*.om from demo/data/logs and demo/data/shop.db; returns the number of samples written."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    rng = random.Random(SEED)
    db = sqlite3.connect(DATA / "shop.db")
    try:
        files = {
            "order-service": [*pool_families(db, "order-service"), *http_families("order-service")],
            "payment-service": pool_families(db, "payment-service"),
            "checkout-api": http_families("checkout-api"),
            "inventory-service": http_families("inventory-service"),
            "shop-db": db_families(db, rng),
        }
    finally:
        db.close()
    samples = 0
    targets = [(name, f"{name}:8080") for name in files if name != "shop-db"] + [("mysqld", "shop-db:9104")]
    files["targets"] = [up_family(targets)]
    for name, families in files.items():
        samples += sum(len(f.lines) for f in families)
        (root / f"{name}.om").write_text(render(families), encoding="utf-8")
    return samples


def main() -> None:
    samples = write_metrics(DATA / "metrics")
    print(f"wrote {samples} metric samples under {DATA / 'metrics'}")


if __name__ == "__main__":
    main()

