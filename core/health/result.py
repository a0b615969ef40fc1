"""The result of one check and how a set of checks runs: concurrently, each bounded in time, never raising."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 3.0
SLOW_CHECK_TIMEOUT_S = 10.0
"""The bound of a check that must import an SDK or parse a folder first (seconds of CPU, in a thread, on a loaded
machine) before it can answer; a network wait inside it keeps its own shorter timeout."""


class Level(StrEnum):
    """How a check ended: OK; WARN (serve starts, readiness fails); FATAL (serve refuses to start); SKIP (unused)."""

    OK = "ok"
    WARN = "warning"
    FATAL = "FATAL"
    SKIP = "skipped"


class CheckResult(BaseModel):
    """One line of `diagbot check`: what was checked, how it ended and the exact fix. Never holds a secret."""

    name: str
    """Stable item name (`slack.bot_token`, `redis`, `tool.query_mysql`); readiness names failing parts by it."""
    level: Level
    detail: str
    """What was checked and what was found (URLs without credentials)."""
    fix: str = ""
    """The exact fix when the level is WARN or FATAL."""

    def line(self) -> str:
        """The one-line rendering: level, name, detail and fix."""
        text = f"{self.level.value:<8} {self.name}: {self.detail}"
        return text + (f" -> fix: {self.fix}" if self.fix and self.level in (Level.WARN, Level.FATAL) else "")


@dataclass(frozen=True)
class Check:
    """A named check; `failing` is the level when it raises or exceeds its time (its result otherwise decides)."""

    name: str
    run: Callable[[], Awaitable[CheckResult]]
    failing: Level = Level.FATAL
    fix: str = ""
    timeout_s: float | None = None
    """Its own time bound, for checks that must start something slow (MCP servers); None: the common bound."""


def static(result: CheckResult) -> Callable[[], Awaitable[CheckResult]]:
    """A check whose result is already known (settings alone), run like the others."""

    async def known() -> CheckResult:
        return result

    return known


async def _bounded(check: Check, timeout_s: float) -> CheckResult:
    try:
        async with asyncio.timeout(timeout_s):
            return await check.run()
    except TimeoutError:
        return CheckResult(name=check.name, level=check.failing, detail=f"no answer within {timeout_s:g} s",
                           fix=check.fix or "check that the service is up and reachable from here")
    except Exception as exc:  # a check never raises: the operator gets a line, not a traceback
        log.debug("check %s raised", check.name, exc_info=True)
        return CheckResult(name=check.name, level=check.failing, detail=f"check failed: {type(exc).__name__}",
                           fix=check.fix)


async def run_checks(checks: Sequence[Check], timeout_s: float = CHECK_TIMEOUT_S) -> list[CheckResult]:
    """Run every check concurrently, each within timeout_s; results in the order of `checks`."""
    return list(await asyncio.gather(*(_bounded(c, c.timeout_s or timeout_s) for c in checks)))


def fatal(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The results that must stop `diagbot serve`."""
    return [r for r in results if r.level is Level.FATAL]
