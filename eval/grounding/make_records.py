"""Make records.jsonl: real canonical records of tool calls over the demo incident (demo/data), through the real
ToolBoundary with the demo's pinned clock. Run from the repo root: python eval/grounding/make_records.py

Each call gets a fixed tool_call_id; the eval puts the records a case names into a fresh run of its own.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from core.bootstrap import build_services
from core.run import RunContext
from entrypoints.demo import demo_settings

OUT = Path(__file__).resolve().parent / "records.jsonl"
RUN = "eval-demo"
ORDER, ERROR = "order-service", "ERROR"
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("c_pool", "query_logs", {"service": ORDER, "query": "Connection is not available", "level": ERROR, "limit": 5}),
    ("c_pool17", "query_logs", {"service": ORDER, "query": "Connection is not available", "level": ERROR, "limit": 17}),
    ("c_pool_late", "query_logs", {"service": ORDER, "query": "Connection is not available", "level": ERROR,
                                   "start": "2026-11-29T23:02:00Z", "end": "2026-11-29T23:30:00Z", "limit": 3}),
    ("c_window2h", "query_logs", {"service": ORDER, "query": "HikariPool", "level": ERROR,
                                  "start": "2026-11-29T21:30:00Z", "end": "2026-11-29T23:30:00Z", "limit": 3}),
    ("c_checkout502", "query_logs", {"service": "checkout-api", "query": "502 Bad Gateway", "level": ERROR, "limit": 4}),
    ("c_checkout504", "query_logs", {"service": "checkout-api", "query": "Gateway Timeout", "level": ERROR, "limit": 4}),
    ("c_none", "query_logs", {"service": "notification-service", "query": "timeout"}),
    ("c_none_oom", "query_logs", {"service": ORDER, "query": "OutOfMemoryError", "level": ERROR}),
    ("s_deploys", "query_mysql", {"sql": "SELECT service, version, deployed_at, change_summary FROM deployments "
                                         "ORDER BY deployed_at DESC LIMIT 3"}),
    ("s_pool", "query_mysql", {"sql": "SELECT ts, pool_name, max_size, active, idle, waiting, timeouts FROM "
                                      "db_connection_pool_stats WHERE service = 'order-service' ORDER BY ts DESC LIMIT 3"}),
    ("s_batch", "query_mysql", {"sql": "SELECT job_name, started_at, status, rows_processed, db_connections_held "
                                       "FROM batch_job_runs WHERE status = 'RUNNING'"}),
    ("s_alerts", "query_mysql", {"sql": "SELECT fired_at, service, alert_name, summary FROM alerts ORDER BY fired_at"}),
    ("s_none", "query_mysql", {"sql": "SELECT version, deployed_at FROM deployments WHERE service = 'order-service' "
                                      "AND version = '4.19.0'"}),
    ("k_hikari", "lookup_knowledge", {"query": "HikariCP pool exhaustion", "top_k": 1}),
]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        services = await build_services(demo_settings(f"sqlite+aiosqlite:///{tmp}/eval.db"))
        try:
            ctx = RunContext(run_id=RUN, session_key="eval", query="eval corpus", timeline=services.timeline_for(RUN))
            for call_id, name, arguments in CALLS:
                await services.boundary.invoke(ctx, call_id, name, arguments)
            found = await services.canonical.get_many(RUN, [c for c, _, _ in CALLS])
        finally:
            await services.aclose()
    lines = []
    for call_id, _, _ in CALLS:
        record = found[call_id]
        assert record is not None, call_id
        lines.append(record.model_dump_json(exclude={"raw_result"}))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} records to {OUT}")


if __name__ == "__main__":
    asyncio.run(main())
