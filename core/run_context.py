"""Per-run runtime state shared by the agent loop, the ToolBoundary and release: ids, budgets, counters, cancel."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from core.contracts.run import Budgets
from core.ports import ProgressSink, Timeline


@dataclass
class RunContext:
    """Everything a component needs to know about the run it works for. Created by the chat service."""

    run_id: str
    session_key: str
    query: str
    timeline: Timeline
    budgets: Budgets = field(default_factory=Budgets)
    progress: ProgressSink | None = None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    started_monotonic: float = field(default_factory=time.monotonic)
    tool_calls: int = 0
    observation_bytes: int = 0
    steps: int = 0

    @property
    def deadline_monotonic(self) -> float:
        return self.started_monotonic + self.budgets.deadline_s

    def seconds_left(self) -> float:
        return max(0.0, self.deadline_monotonic - time.monotonic())
