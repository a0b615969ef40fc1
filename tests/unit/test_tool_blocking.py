"""core/tools/blocking.py: a tool's blocking work and the boundary's step for its result in one worker thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from pydantic import BaseModel

from core.contracts.evidence import RawResult
from core.contracts.run import Budgets
from core.evidence.boundary import ToolBoundary
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryAuditStore, InMemoryTimelineStore
from core.tools.blocking import finishing, run_blocking
from testkit.tool_names import ToolName
from testkit.tools import FakeArgs


def _raw(n: int = 3) -> RawResult:
    return RawResult(items=[{"doc": f"rb{i}.md", "heading": "Pool", "text": "HikariCP pool exhausted", "score": 1.0}
                            for i in range(n)], total_count=n)


async def test_without_an_offered_step_the_work_runs_in_a_thread() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def work() -> RawResult:
        seen.append(threading.get_ident())
        return _raw()

    assert (await run_blocking(work)).total_count == 3
    assert seen
    assert seen[0] != loop_thread


async def test_the_offered_step_runs_on_the_result_in_the_same_thread() -> None:
    threads: list[int] = []
    stepped: list[RawResult] = []

    def work() -> RawResult:
        threads.append(threading.get_ident())
        return _raw()

    def step(raw: RawResult) -> None:
        threads.append(threading.get_ident())
        stepped.append(raw)

    with finishing(step):
        raw = await run_blocking(work)
    assert stepped == [raw]
    assert stepped[0] is raw
    assert len(set(threads)) == 1
    assert threads[0] != threading.get_ident()
    await run_blocking(work)  # outside `finishing`: no step
    assert len(stepped) == 1


async def test_a_failing_step_never_fails_the_tool() -> None:
    def step(raw: RawResult) -> None:
        raise RuntimeError("bug in the step")

    with finishing(step):
        assert (await run_blocking(_raw)).total_count == 3


class _BlockingTool:
    """A native tool whose work goes through run_blocking (as the logs, SQLite and embedded metrics tools do)."""

    name = ToolName.LOOKUP_KNOWLEDGE
    args_model = FakeArgs

    def __init__(self, through: bool) -> None:
        self.through = through

    async def run(self, args: BaseModel) -> RawResult:
        return await (run_blocking(_raw) if self.through else asyncio.to_thread(_raw))


async def _projection(tool: _BlockingTool, hops: list[int]) -> tuple[dict[str, Any], Any]:
    canonical = InMemoryCanonicalStore()
    boundary = ToolBoundary({tool.name: tool}, canonical, InMemoryAuditStore())
    ctx = RunContext(run_id="run-1", session_key="T:C:1", query="why?", budgets=Budgets(),
                     timeline=RunTimeline("run-1", InMemoryTimelineStore()))
    loop = asyncio.get_running_loop()
    original = loop.run_in_executor

    def counted(executor: Any, func: Any, *args: Any) -> Any:
        hops.append(1)
        return original(executor, func, *args)

    loop.run_in_executor = counted  # type: ignore[method-assign,assignment]
    try:
        projection = await boundary.invoke(ctx, "call_a", tool.name, '{"query": "pool"}')
    finally:
        loop.run_in_executor = original  # type: ignore[method-assign]
    record = (await canonical.get_many("run-1", ["call_a"], with_raw=True))["call_a"]
    assert record is not None
    return projection, record.model_dump(exclude={"started_at", "finished_at", "duration_ms"})


async def test_the_boundary_makes_one_hop_and_the_same_projection_and_record() -> None:
    """Through run_blocking the boundary caps and projects in the tool's thread (one executor hop, not two), and the
    projection and the canonical record are what its own hop makes."""
    hops_one: list[int] = []
    hops_two: list[int] = []
    one = await _projection(_BlockingTool(through=True), hops_one)
    two = await _projection(_BlockingTool(through=False), hops_two)
    assert (len(hops_one), len(hops_two)) == (1, 2)
    assert one == two
    assert one[0]["count"] == 3
    assert one[0]["evidence_status"] == "EVIDENCE_FOUND"
