"""'Now' for the tools' default windows: DIAG_CLOCK, the demo's clock over the bundled demo data, or the real clock."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path

from core.settings import DEMO_CLOCK, DEMO_DATA, Settings
from core.tools.contract import ToolEnv

log = logging.getLogger(__name__)


def reads_demo_logs(settings: Settings) -> bool:
    """True when query_logs reads the bundled demo logs (no Loki/Elasticsearch, DIAG_LOGS_PATH at its default)."""
    if settings.diag_loki_url or settings.diag_es_url:
        return False
    try:
        return Path(settings.diag_logs_path).resolve() == (DEMO_DATA / "logs").resolve()
    except OSError:
        return False


def pinned_clock(settings: Settings) -> datetime | None:
    """The pinned 'now': DIAG_CLOCK when set; over the bundled demo logs without it, the demo's clock (their
    incident is in the past, so the real clock would find nothing in the default window)."""
    if settings.diag_clock is not None:
        return settings.diag_clock
    return DEMO_CLOCK if reads_demo_logs(settings) else None


def clock_from(settings: Settings) -> Callable[[], datetime]:
    """'Now' for default windows: the pinned clock (UTC if naive, see pinned_clock), else the real UTC clock."""
    pinned = pinned_clock(settings)
    if pinned is None:
        return lambda: datetime.now(UTC)
    fixed = pinned if pinned.tzinfo is not None else pinned.replace(tzinfo=UTC)
    return lambda: fixed


def tool_env(settings: Settings, stack: AsyncExitStack) -> ToolEnv:
    """What every toolset's build gets: the clock (said once when the demo's clock stands in) and the closing stack."""
    pinned = pinned_clock(settings)
    if settings.diag_clock is None and pinned is not None:
        log.warning("DIAG_CLOCK unset over the bundled demo data: 'now' is the demo's clock %s "
                    "(set DIAG_CLOCK to choose another)", pinned.isoformat())
    return ToolEnv(clock=clock_from(settings), pinned=pinned, stack=stack)
