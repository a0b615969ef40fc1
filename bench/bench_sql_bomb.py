"""Peak RSS and ack latency while bomb queries run through the real ToolBoundary and SqlTool.

The event loop that runs the tool also serves a tiny aiohttp ack endpoint (what the Slack Events route does before
any work: verify and answer 200); a client thread hits it every 10 ms while each bomb runs, and a 5 ms ticker
measures event-loop lag. Bombs: the issue's cases (the printf cell bomb and randomblob, now refused by the
allow-list), one that passes the policy and doubles a string each recursion step until a limit stops it, and a
table of 2.5 MB cells read whole (cut per cell on the server, stopped by the result byte budget). SQLite always;
MariaDB and PostgreSQL (privileged accounts, DIAG_SQL_ALLOW_PRIVILEGED semantics) when reachable, each in its own
uniquely named database. Goal: RSS growth <= 64 MiB, ack p99 <= 50 ms. Figures are for this machine (2 cores,
shared with other work).

Run: python bench/bench_sql_bomb.py
"""

from __future__ import annotations

import asyncio
import http.client
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.contracts.run import Budgets
from core.evidence.boundary import ToolBoundary
from core.run import RunContext
from core.runtime import tune_gc
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from core.tools.sql.tool import SqlTool
from testkit.tool_names import ToolName

BIG_ROWS = 40
BIG_CELL = 2_500_000
BOMBS = [
    ("printf cell bomb (issue)", "SELECT id, printf('%.*c', 2500000, 'x') FROM big"),
    ("randomblob (issue)", "SELECT hex(randomblob(400000000))"),
    ("string doubling CTE", "WITH RECURSIVE c(n, s) AS (SELECT 1, CAST('x' AS CHAR(65535)) UNION ALL "
                            "SELECT n + 1, CONCAT(s, s) FROM c WHERE n < 40) SELECT n, s FROM c"),
    ("2.5 MB cells read whole", "SELECT id, body FROM big"),
    ("cross join CPU bomb", "SELECT COUNT(*) FROM big a, big b, big c, big d, big e, big f, big g"),
]


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else (values[0] if values else 0.0)


class AckServer:
    """An aiohttp endpoint on the benchmark's loop, and a client thread timing its round trips."""

    def __init__(self) -> None:
        self.port = 0
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def ack(request: web.Request) -> web.Response:
            await request.read()
            return web.Response(text="")

        app = web.Application()
        app.router.add_post("/slack/events", ack)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def client(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self._stop.is_set():
            t0 = time.monotonic()
            conn.request("POST", "/slack/events", body=b'{"type":"event_callback"}')
            conn.getresponse().read()
            self.latencies.append(time.monotonic() - t0)
            time.sleep(0.01)

    def measure(self) -> threading.Thread:
        self._stop.clear()
        self.latencies = []
        thread = threading.Thread(target=self.client, daemon=True)
        thread.start()
        return thread

    def stop(self, thread: threading.Thread) -> None:
        self._stop.set()
        thread.join()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@asynccontextmanager
async def sqlite_db() -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bomb.db"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO big VALUES (?, ?)", [(i, "y" * BIG_CELL) for i in range(BIG_ROWS)])
        conn.commit()
        conn.close()
        yield f"sqlite:///{path}"


@asynccontextmanager
async def mariadb_db() -> AsyncIterator[str]:
    import aiomysql

    db = f"diag_bench_{uuid.uuid4().hex[:8]}"
    admin = await aiomysql.connect(host="127.0.0.1", user="root", autocommit=True)
    try:
        async with admin.cursor() as cur:
            await cur.execute(f"CREATE DATABASE {db}")
            await cur.execute(f"CREATE TABLE {db}.big (id INT PRIMARY KEY, body LONGTEXT)")
            for i in range(BIG_ROWS):
                await cur.execute(f"INSERT INTO {db}.big VALUES ({i}, REPEAT('y', {BIG_CELL}))")
        yield f"mysql://root@127.0.0.1:3306/{db}"
    finally:
        async with admin.cursor() as cur:
            await cur.execute(f"DROP DATABASE IF EXISTS {db}")
        admin.close()


@asynccontextmanager
async def postgres_db() -> AsyncIterator[str]:
    import asyncpg

    db = f"diag_bench_{uuid.uuid4().hex[:8]}"
    root = await asyncpg.connect(host="127.0.0.1", user="postgres", database="test")
    await root.execute(f"CREATE DATABASE {db}")
    try:
        conn = await asyncpg.connect(host="127.0.0.1", user="postgres", database=db)
        await conn.execute("CREATE TABLE big (id INT PRIMARY KEY, body TEXT)")
        await conn.execute(f"INSERT INTO big SELECT i, repeat('y', {BIG_CELL}) FROM generate_series(0, {BIG_ROWS - 1}) i")
        await conn.close()
        yield f"postgresql://postgres@127.0.0.1:5432/{db}"
    finally:
        await root.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        await root.close()


async def _ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        t0 = time.monotonic()
        await asyncio.sleep(0.005)
        lags.append(time.monotonic() - t0 - 0.005)


Database = Callable[[], AbstractAsyncContextManager[str]]


async def run_backend(name: str, factory: Database, ack: AckServer) -> None:
    async with factory() as url:
        tool = SqlTool(url, timeout_s=5, row_cap=200, allow_privileged=True)
        boundary = ToolBoundary({ToolName.QUERY_MYSQL: tool}, InMemoryCanonicalStore(), InMemoryAuditStore())
        for label, sql in [("warm-up (first use)", "SELECT COUNT(*) FROM big"), *BOMBS]:
            run_id = f"bench_{uuid.uuid4().hex[:6]}"
            ctx = RunContext(run_id=run_id, session_key="T:C:1", query="q", budgets=Budgets(tool_timeout_s=15),
                             timeline=RunTimeline(run_id, InMemoryTimelineStore()))
            lags: list[float] = []
            stop = asyncio.Event()
            ticker = asyncio.create_task(_ticker(lags, stop))
            client = ack.measure()
            await asyncio.sleep(0.1)
            rss0 = _status("VmRSS")
            _reset_peak()
            t0 = time.monotonic()
            projection = await boundary.invoke(ctx, "c1", "query_mysql", {"sql": sql})
            took = time.monotonic() - t0
            growth = (_status("VmHWM") - rss0) / 2**20
            await asyncio.sleep(0.1)
            stop.set()
            await ticker
            ack.stop(client)
            error = projection.get("error") or {}
            answer = error.get("code") or f"{projection['evidence_status']} {projection['count']} rows"
            print(f"{name:9} {label:26} {took:6.2f} s  {answer:28} RSS +{growth:6.1f} MiB  "
                  f"ack p99 {_p99(ack.latencies) * 1000:6.1f} ms (n={len(ack.latencies)})  "
                  f"loop lag p99 {_p99(lags) * 1000:6.1f} ms  peak RSS {_status('VmHWM') / 2**20:6.1f} MiB")


async def main() -> None:
    tune_gc()
    ack = AckServer()
    await ack.start()
    print("backend   bomb                         time    answer                       growth         "
          "ack (HTTP, same loop)        event loop          (2 cores, shared)")
    backends: list[tuple[str, Database]] = [("sqlite", sqlite_db), ("mariadb", mariadb_db), ("postgres", postgres_db)]
    try:
        for name, factory in backends:
            try:
                await run_backend(name, factory, ack)
            except OSError as exc:
                print(f"{name:9} skipped: {type(exc).__name__} (server not reachable)")
    finally:
        await ack.close()


if __name__ == "__main__":
    asyncio.run(main())
