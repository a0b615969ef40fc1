"""lookup_knowledge's static description (the toolset contract): runbook sections, words and views."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.evidence.subjects import shorten
from core.tools.contract import (
    ArgumentRoles,
    Cleaner,
    EvidenceView,
    Excerpt,
    ExcerptsView,
    Fact,
    FieldKind,
    FieldQuantity,
    Nouns,
    QuantityKinds,
    StepHints,
    ToolSpec,
)
from core.tools.knowledge.args import NAME, KnowledgeArgs

LINE_MAX = 200
QUERY_MAX = 60
_MAX_LABEL_CHARS = 200


class KnowledgeBlock(BaseModel):
    """One runbook section returned by lookup_knowledge."""

    doc: str = Field(description="Path of the document relative to the knowledge folder.")
    heading: str = Field(description="Heading of the section this block is.")
    text: str = Field(description="Section text, possibly shortened (then ends with a marker).")
    score: float = Field(description="Retrieval score; higher is better.")


class KnowledgeProjection(ProjectionBase):
    """Projection of a lookup_knowledge call."""

    tool_name: Literal["lookup_knowledge"] = NAME
    evidence_blocks: list[KnowledgeBlock] = Field(default_factory=list)


def _score(value: Any) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        return 0.0
    return score if math.isfinite(score) else 0.0


def _block(item: Mapping[str, Any], clean: Cleaner) -> KnowledgeBlock:
    return KnowledgeBlock(
        doc=clean.text(item.get("doc", ""), _MAX_LABEL_CHARS),
        heading=clean.text(item.get("heading", ""), _MAX_LABEL_CHARS),
        text=clean.text(item.get("text", ""), clean.item_chars),
        score=_score(item.get("score")),
    )


def blocks_of(projection: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The runbook sections a projection lists."""
    value = projection.get("evidence_blocks")
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


class KnowledgeSpec(ToolSpec):
    """lookup_knowledge: runbook sections ranked for a query; their text is guidance, never an observation."""

    name = NAME
    args_model = KnowledgeArgs
    summary = "Search the runbooks. Their text is general guidance, never a fact about this environment."
    projection_model = KnowledgeProjection
    items_field = "evidence_blocks"
    nouns = Nouns(kind="Runbooks", what="runbook lookup", found="runbook section", label="section")
    # Runbook prose states numbers in words too; the retrieval score describes the search, not the environment.
    quantities = QuantityKinds(MappingProxyType({"text": FieldQuantity(FieldKind.WORDS),
                                                 "score": FieldQuantity(FieldKind.IGNORED)}))
    arguments = ArgumentRoles(limit=("top_k",), query=("query",))

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        return [_block(item, clean) for item in raw.items[:limit]]

    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        return f'"{shorten(arguments.get("query") or "", QUERY_MAX)}"'

    def label_subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        return f'"{shorten(arguments.get("query") or "", 80)}"'

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        query = shorten(arguments.get("query") or "", 80)
        blocks = blocks_of(projection)
        if status is EvidenceStatus.NO_EVIDENCE or not blocks:
            return Fact(f'No runbook section matched "{query}".')
        first = next((b for b in blocks if str(b.get("text") or "").strip()), blocks[0])
        more = f" (+{len(blocks) - 1} more section{'s' if len(blocks) > 2 else ''})" if len(blocks) > 1 else ""
        head = (f"Runbook {shorten(first.get('doc', '?'), 80)} § {shorten(first.get('heading', '?'), 80)} matched "
                f'"{query}"{more}')
        text = str(first.get("text") or "").strip()
        if not text:  # a heading without body text: name the section, never quote an empty excerpt
            return Fact(head + ".")
        return Fact(head + "; it says (guidance, not an observation of this environment):", (shorten(text, LINE_MAX),))

    def error_subject(self, arguments: Mapping[str, Any]) -> str:
        return f'The runbook lookup "{shorten(arguments.get("query") or "", 60)}"'

    def next_steps(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
                   reason: str) -> StepHints:
        blocks = blocks_of(projection) if status is EvidenceStatus.EVIDENCE_FOUND else []
        if not blocks:
            return super().next_steps(status, projection, arguments, reason)
        return StepHints((f"Read runbook {shorten(blocks[0].get('doc', '?'), 80)} § "
                          f"{shorten(blocks[0].get('heading', '?'), 80)} and escalate as it says if the symptoms match.",))

    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        blocks = blocks_of(projection)
        if not blocks:
            return None
        return ExcerptsView(tuple(Excerpt(str(b.get("doc", "?")), str(b.get("heading", "?")), str(b.get("text", "")))
                                  for b in blocks))

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        blocks = blocks_of(projection)
        if not blocks:
            return ""
        return shorten(f"{blocks[0].get('doc', '?')} § {blocks[0].get('heading', '?')}: {blocks[0].get('text', '')}",
                       limit)
