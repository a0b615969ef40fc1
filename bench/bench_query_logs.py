"""Benchmark: query_logs on ~1 GB of JSON lines against ripgrep on the same files.

Run `python bench/bench_query_logs.py [--gb 1.0] [--runs 3]`. Data goes to bench/_data/logs (gitignored) and is
reused while its size matches. The query is selective (service + keyword, default limit). Two ripgrep figures are
printed: the equivalent regex (service field and keyword on one line, case-insensitive) and the keyword alone
(a lower bound that does not check the service). Goal: query_logs <= 2x the equivalent ripgrep run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Imported after the sys.path line so the bench runs from a plain checkout.
from core.tools.logs.args import LogsArgs
from core.tools.logs.jsonl import LogsTool

DATA = Path(__file__).resolve().parent / "_data" / "logs"
SERVICES = ["order-service", "payment-service", "checkout-api", "inventory-service", "notification-service",
            "search-service", "auth-service", "shipping-service"]
KEYWORD = "deadlock"
T0 = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
BLOCK_LINES = 60_000


def _block(rng: random.Random, service: str) -> bytes:
    """One pre-rendered block of realistic lines for a service; about 0.05% of order-service lines say deadlock."""
    lines = []
    for i in range(BLOCK_LINES):
        ts = (T0 + timedelta(milliseconds=i * 120 + rng.randint(0, 119))).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        roll = rng.random()
        if service == "order-service" and roll < 0.0005:
            order = rng.randint(1, 10**6)
            level, msg = "ERROR", f"Deadlock found when trying to get lock; try restarting transaction order={order}"
        elif roll < 0.02:
            level, msg = "WARN", f"Slow request GET /api/items/{rng.randint(1, 10**6)} took {rng.randint(500, 3000)}ms"
        elif roll < 0.3:
            level, msg = "DEBUG", f"cache lookup key=item:{rng.randint(1, 10**6)} hit={rng.random() < 0.8}"
        else:
            level, msg = "INFO", f"GET /api/items/{rng.randint(1, 10**6)} 200 OK in {rng.randint(5, 200)}ms"
        lines.append(
            f'{{"timestamp": "{ts}", "service": "{service}", "level": "{level}", "message": "{msg}", '
            f'"pod": "{service}-{rng.randint(1000, 9999)}", "trace_id": "{rng.getrandbits(64):016x}"}}\n'
        )
    return "".join(lines).encode()


def ensure_data(target_bytes: int) -> tuple[int, int]:
    """Write (or reuse) about target_bytes of JSON lines; returns (bytes, files)."""
    marker = DATA / ".complete"
    if marker.exists() and marker.read_text().strip() == str(target_bytes):
        files = sorted(DATA.glob("*.jsonl"))
        return sum(f.stat().st_size for f in files), len(files)
    if DATA.exists():
        shutil.rmtree(DATA)
    DATA.mkdir(parents=True)
    rng = random.Random(7)
    per_file = target_bytes // len(SERVICES)
    for service in SERVICES:
        block = _block(rng, service)
        repeats = max(1, per_file // len(block))
        with (DATA / f"{service}.jsonl").open("wb") as handle:
            for _ in range(repeats):
                handle.write(block)
    marker.write_text(str(target_bytes))
    files = sorted(DATA.glob("*.jsonl"))
    return sum(f.stat().st_size for f in files), len(files)


def ensure_rg() -> str | None:
    """Path of ripgrep, installing it with apt-get when missing and running as root."""
    found = shutil.which("rg")
    if found:
        return found
    print("ripgrep (rg) is missing: install it with `apt-get install ripgrep`.")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        print("running as root: installing ripgrep ...")
        subprocess.run(["apt-get", "install", "-y", "-qq", "ripgrep"], check=False, capture_output=True)
    return shutil.which("rg")


def time_rg(rg: str, pattern: str, runs: int) -> tuple[float, int]:
    """Best wall time of `rg -c -i pattern` over the data and the summed match count."""
    times, count = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([rg, "-c", "-i", "--no-filename", pattern, str(DATA)], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        count = sum(int(x) for x in out.stdout.split())
    return min(times), count


def time_query_logs(runs: int) -> tuple[list[float], int]:
    """Wall times of query_logs (service + keyword, default limit) and its total_count."""
    tool = LogsTool(DATA, clock=lambda: T0 + timedelta(days=1))
    args = LogsArgs(service="order-service", query=KEYWORD, start=T0 - timedelta(hours=1), end=T0 + timedelta(days=1))
    times, count = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        result = asyncio.run(tool.run(args))
        times.append(time.perf_counter() - start)
        count = result.total_count
    return times, count


def main() -> None:
    """Generate data, time both, print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gb", type=float, default=1.0, help="data size in GB (default 1.0)")
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    start = time.perf_counter()
    size, files = ensure_data(int(opts.gb * 1e9))
    print(f"data: {size / 1e9:.2f} GB in {files} files under {DATA} (ready in {time.perf_counter() - start:.1f}s)")
    # Warm the page cache so both tools read from memory.
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open("rb") as handle:
            while handle.read(64 * 1024 * 1024):
                pass
    times, ours = time_query_logs(opts.runs)
    best = min(times)
    print(f"query_logs: best {best:.3f}s, median {statistics.median(times):.3f}s, "
          f"{size / best / 1e9:.2f} GB/s, total_count={ours}")
    rg = ensure_rg()
    if rg is None:
        print("ripgrep unavailable: no comparison.")
        return
    equivalent = f'"service": *"order-service".*{KEYWORD}'
    rg_eq, rg_eq_count = time_rg(rg, equivalent, opts.runs)
    rg_kw, rg_kw_count = time_rg(rg, KEYWORD, opts.runs)
    print(f"rg -ci '{equivalent}': best {rg_eq:.3f}s, count={rg_eq_count}")
    print(f"rg -ci '{KEYWORD}' (keyword only, lower bound): best {rg_kw:.3f}s, count={rg_kw_count}")
    print(f"ratio query_logs / rg equivalent regex: {best / rg_eq:.2f}x (goal <= 2x)")
    print(f"ratio query_logs / rg keyword only:     {best / rg_kw:.2f}x")
    if rg_eq_count != ours:
        print(f"WARNING: counts differ (query_logs {ours}, rg {rg_eq_count})")


if __name__ == "__main__":
    main()
