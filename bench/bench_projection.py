"""Projection cost and size for raw results from 1 KB to 10 MB (logs-like and sql-like). Goal: always <= 8 KiB."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.contracts.evidence import RawResult
from core.evidence.projection import project, projection_size
from core.evidence.redaction import redact
from testkit.tool_names import ToolName

SIZES = [("1 KB", 1_000), ("10 KB", 10_000), ("100 KB", 100_000), ("1 MB", 1_000_000), ("10 MB", 10_000_000)]
MAX_BYTES = 8192
LINE = ("HikariPool-1 - Connection is not available, request timed out after 30000ms; "
        "order_id=981 user=svc password=hunter2 upstream=mysql://app:s3cret@db.internal:3306/shop")


def logs_many(size: int) -> RawResult:
    """Log lines of about 250 bytes each until the raw result is about `size` bytes."""
    one = {"timestamp": "2024-05-01T23:05:28.123Z", "service": "order-service", "level": "ERROR", "message": LINE,
           "trace_id": "4bf92f3577b34da6", "latency_ms": 30001}
    n = max(1, size // 260)
    return RawResult(items=[dict(one, trace_id=f"t{i}") for i in range(n)], total_count=n)


def logs_one_huge(size: int) -> RawResult:
    """A single log line whose message is the whole size (stack-trace dumps do this)."""
    return RawResult(items=[{"timestamp": "t", "service": "s", "level": "ERROR", "message": (LINE + " ") * (size // 160 + 1)}],
                     total_count=1)


def sql_many(size: int) -> RawResult:
    """Rows of 8 columns (ints, floats, short and medium strings) until about `size` bytes."""
    columns = ["id", "order_id", "status", "amount", "currency", "customer_email", "note", "created_at"]
    row = [1, 981, "FAILED", 12.5, "EUR", "alice@example.com", "payment gateway timeout " * 4, "2024-05-01T23:05:28"]
    n = max(1, size // 200)
    return RawResult(columns=columns, rows=[[i, *row[1:]] for i in range(n)], total_count=n)


SHAPES = [("logs: many lines", ToolName.QUERY_LOGS, logs_many), ("logs: one huge line", ToolName.QUERY_LOGS, logs_one_huge),
          ("sql: many rows", ToolName.QUERY_MYSQL, sql_many)]


def time_ms(fn: object, repeat: int) -> float:
    """Median wall time of fn() in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def cpu_s(fn: object, repeat: int = 5) -> float:
    """Best CPU time of fn() in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    """Print the table, then the redaction throughput."""
    print(f"projection bound: {MAX_BYTES} bytes (max_items=50, max_item_chars=500)\n")
    header = f"{'shape':<22}{'raw':>8}{'raw bytes':>12}{'items':>8}{'shown':>7}{'proj bytes':>12}{'ms':>9}{'ms/ms(1KB)':>12}"
    print(header)
    print("-" * len(header))
    worst = 0
    for label, tool, build in SHAPES:
        base_ms = None
        for size_label, size in SIZES:
            raw = build(size)
            raw_bytes = len(raw.model_dump_json())
            projection = project("call_bench", tool, raw, None, max_bytes=MAX_BYTES)
            size_out = projection_size(projection)
            worst = max(worst, size_out)
            shown = len(projection.get("logs", projection.get("rows", [])))
            items = len(raw.items) or len(raw.rows)
            ms = time_ms(lambda raw=raw, tool=tool: project("call_bench", tool, raw, None, max_bytes=MAX_BYTES), 7)
            base_ms = base_ms or ms
            print(f"{label:<22}{size_label:>8}{raw_bytes:>12,}{items:>8}{shown:>7}{size_out:>12,}{ms:>9.2f}{ms / base_ms:>12.1f}")
    print(f"\nlargest projection: {worst} bytes -> {'OK' if worst <= MAX_BYTES else 'OVER'} (goal <= {MAX_BYTES})")

    text = (LINE + "\n") * 6000
    ms = time_ms(lambda: redact(text), 5)
    plain = ("GET /api/orders/42 200 12ms user_id=981 trace=4bf92f3577b34da6\n") * 15000
    ms_plain = time_ms(lambda: redact(plain), 5)
    print(f"redact(): {len(text) / 1e6 / (ms / 1000):.1f} MB/s on secret-dense text, "
          f"{len(plain) / 1e6 / (ms_plain / 1000):.1f} MB/s on ordinary log text (wall, median of 5; goals >= 10 and >= 40)")
    cpu, cpu_plain = cpu_s(lambda: redact(text)), cpu_s(lambda: redact(plain))
    print(f"redact(): {len(text) / 1e6 / cpu:.1f} MB/s on secret-dense text, "
          f"{len(plain) / 1e6 / cpu_plain:.1f} MB/s on ordinary log text (CPU, best of 5: other processes drift out)")


if __name__ == "__main__":
    main()
