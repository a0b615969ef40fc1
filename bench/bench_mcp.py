"""MCP toolset cost: per-call latency through McpManager + McpTool next to the bare SDK session on the same stdio
server, a restart after a hang, and the work to bound and project a 10 MB answer.

Run: python bench/bench_mcp.py   (uses tests/mcp_toolsets/servers/oddities.py, the official SDK's MCPServer, over
stdio). Goals: our overhead per call <= 1.3x the bare SDK call (ratio of medians, same server, interleaved rounds);
a 10 MB answer bounded and projected in < 200 ms of CPU, off the event loop. The machine has 2 cores; the server
process shares them, so read the ratios, not the absolute figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path

from core.evidence.projection import safe_text
from core.tools.mcp.config import McpServerConfig, ToolsetsFile
from core.tools.mcp.manager import McpManager
from core.tools.mcp.sdk import CallResult, Connection
from core.tools.mcp.spec import McpSpec
from core.tools.mcp.tool import McpTool

SERVER = [sys.executable, str(Path(__file__).resolve().parent.parent / "tests" / "mcp_toolsets" / "servers" / "oddities.py")]
CALLS = 200
ROUNDS = 4


class _Cleaner:
    item_chars = 500
    columns = 50

    def text(self, value: object, limit: int) -> str:
        return safe_text(str(value))[:limit]

    def redact(self, text: str) -> str:
        return safe_text(text)

    def scalar(self, value: object, limit: int) -> object:
        return value

    def cut(self) -> None:
        return None


async def _bare(config: McpServerConfig) -> list[float]:
    conn = await Connection.open(config)
    try:
        out = []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            await conn.call("error_rate", {"service": "checkout-api"}, 10)
            out.append(time.perf_counter() - t0)
        return out
    finally:
        await conn.close()


async def _ours(config: McpServerConfig) -> list[float]:
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    try:
        tool = McpTool(manager.tools["mcp_odd_error_rate"], manager, max_output_bytes=config.max_output_bytes,
                       timeout_s=config.timeout_s)
        out = []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            await tool.run(tool.validate({"service": "checkout-api"}))
            out.append(time.perf_counter() - t0)
        return out
    finally:
        await manager.close()


async def _restart(config: McpServerConfig) -> float:
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    try:
        tool = McpTool(manager.tools["mcp_odd_hang"], manager, max_output_bytes=config.max_output_bytes, timeout_s=1)
        with contextlib.suppress(Exception):
            await tool.run(tool.validate({"seconds": 30}))
        ok = McpTool(manager.tools["mcp_odd_error_rate"], manager, max_output_bytes=config.max_output_bytes, timeout_s=1)
        t0 = time.perf_counter()
        await ok.run(ok.validate({"service": "x"}))
        return time.perf_counter() - t0
    finally:
        await manager.close()


async def _huge(config: McpServerConfig) -> tuple[float, float, float, int]:
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    try:
        tool = McpTool(manager.tools["mcp_odd_huge"], manager, max_output_bytes=config.max_output_bytes, timeout_s=30)
        t0 = time.perf_counter()
        raw = await tool.run(tool.validate({"megabytes": 10}))
        wall = time.perf_counter() - t0
        answer = CallResult(False, [{"type": "text", "text": "x" * 10 * 1024 * 1024}], None)
        b0 = time.process_time()
        tool._raw(answer, {})
        bound_cpu = time.process_time() - b0
        c0 = time.process_time()
        items = McpSpec().project_items(raw, 50, _Cleaner())
        project_cpu = time.process_time() - c0
        return wall, bound_cpu, project_cpu, len(str(items))
    finally:
        await manager.close()


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms, p99 {ordered[int(len(ordered) * 0.99) - 1] * 1000:.2f} ms"


async def main() -> None:
    config = McpServerConfig(name="odd", command=tuple(SERVER), tools=("error_rate", "hang", "huge"), timeout_s=10)
    bare_medians, our_medians = [], []
    for round_ in range(ROUNDS):  # interleaved: A B A B
        bare = await _bare(config)
        ours = await _ours(config)
        bare_medians.append(statistics.median(bare))
        our_medians.append(statistics.median(ours))
        print(f"round {round_ + 1}: bare SDK {_ms(bare)} | McpTool {_ms(ours)}")
    ratio = statistics.median(our_medians) / statistics.median(bare_medians)
    print(f"per-call overhead: {ratio:.2f}x the bare SDK call (median of {ROUNDS} rounds x {CALLS} calls; goal <= 1.3x)")
    print(f"first call after a hung call (timeout 1 s, server restarted): {await _restart(config) * 1000:.0f} ms")
    wall, bound_cpu, cpu, size = await _huge(config)
    print(f"10 MB answer: {wall * 1000:.0f} ms wall from call to bounded raw result (the SDK reads and parses it); "
          f"cutting it to max_output_bytes {bound_cpu * 1000:.1f} ms CPU; project_items {cpu * 1000:.1f} ms CPU -> "
          f"{size} characters (goal < 200 ms CPU)")


if __name__ == "__main__":
    asyncio.run(main())
