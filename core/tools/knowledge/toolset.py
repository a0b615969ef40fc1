"""The knowledge toolset: lookup_knowledge over the Markdown runbooks of DIAG_KNOWLEDGE_PATH."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.health.result import Check, Level
from core.settings import Settings
from core.tools.contract import PlannedCall, Tool, ToolEnv, ToolSpec
from core.tools.knowledge.health import check_knowledge
from core.tools.knowledge.spec import KnowledgeSpec
from core.tools.knowledge.tool import KnowledgeTool
from core.tools.native import NativeToolAdapter, closing

CHECK = "tool.lookup_knowledge"


class KnowledgeToolset:
    """lookup_knowledge."""

    name = "knowledge"
    specs: Sequence[ToolSpec] = (KnowledgeSpec(),)

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        return (NativeToolAdapter(closing(KnowledgeTool(settings.diag_knowledge_path), env), KnowledgeSpec.summary),)

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        return (Check(CHECK, lambda: check_knowledge(settings), failing=Level.WARN),)

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        return ()
