"""The registry of guard checks: rule id (as in rules.toml) -> the small function that implements it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from core.guard.citations import check_evidence_kind, check_invocation_ownership, check_projection_consistency
from core.guard.grounding import check_numeric_grounding
from core.guard.inputs import Finding, GuardInput
from core.guard.instructions import check_tool_text_as_instruction
from core.guard.structure import check_analysis_references, check_draft_structure, check_limitations_scope

Check = Callable[[GuardInput], Iterable[Finding]]

CHECKS: Mapping[str, Check] = MappingProxyType({
    "draft_structure": check_draft_structure,
    "analysis_references": check_analysis_references,
    "limitations_scope": check_limitations_scope,
    "invocation_ownership": check_invocation_ownership,
    "evidence_kind": check_evidence_kind,
    "projection_consistency": check_projection_consistency,
    "numeric_grounding": check_numeric_grounding,
    "tool_text_as_instruction": check_tool_text_as_instruction,
})
