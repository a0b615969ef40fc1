"""lookup_knowledge's check: its folder holds Markdown runbooks."""

from __future__ import annotations

from core.health.result import CheckResult
from core.settings import Settings
from core.tools.checks import check_folder


async def check_knowledge(settings: Settings) -> CheckResult:
    """lookup_knowledge's folder holds *.md runbooks."""
    return await check_folder("tool.lookup_knowledge", "DIAG_KNOWLEDGE_PATH", settings.diag_knowledge_path, "*.md")
