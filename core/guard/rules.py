"""The versioned EvidenceGuard rules file: which deterministic checks run, how strictly, with which parameters.

One rule is one check function (see core/guard/checks.py) and may emit several codes (`RULE_CODES`).
Loading fails loudly on an unknown or missing rule id, a bad severity, unknown parameters, or an attempt
to disable or downgrade a locked rule.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.contracts.release import Severity
from core.resources import package_path

DEFAULT_RULES_FILE = package_path("core.guard", "rules.toml")

RULE_CODES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "draft_structure": (
        "DRAFT_EMPTY",
        "ANALYSIS_EMPTY",
        "ANALYSIS_ID_MISSING",
        "ANALYSIS_ID_DUPLICATE",
        "ANALYSIS_KIND_MISSING",
        "ANALYSIS_TEXT_MISSING",
        "TOOL_REFERENCE_MISSING",
        "TEXT_MISSING",
    ),
    "analysis_references": ("ANALYSIS_REFERENCE_MISSING", "ANALYSIS_REFERENCE_UNKNOWN"),
    "limitations_scope": ("LIMITATIONS_SCOPE_MISSING",),
    "invocation_ownership": ("INVOCATION_MISSING", "INVOCATION_ID_MISMATCH", "INVOCATION_NOT_REFERENCABLE"),
    "evidence_kind": ("EVIDENCE_KIND_MISMATCH",),
    "projection_consistency": (
        "PROJECTION_INVALID",
        "PROJECTION_MISMATCH",
        "PROJECTION_EMPTY_FOUND",
        "PROJECTION_NONEMPTY_NO_EVIDENCE",
    ),
    "numeric_grounding": ("NUMBER_NOT_IN_EVIDENCE",),
    "tool_text_as_instruction": ("TOOL_TEXT_AS_INSTRUCTION",),
})

# Closure rests on these two: every analysis cites something, and every citation is a real call of this run.
# Without them a draft with no evidence at all could pass, so no rules file may switch them off or warn only.
LOCKED_RULES = frozenset({"draft_structure", "invocation_ownership"})


class RulesFileError(ValueError):
    """The rules file cannot be used; the message names the file and the problem."""


class NumericGroundingParams(BaseModel):
    """Parameters of the numeric_grounding rule."""

    model_config = ConfigDict(extra="forbid")

    min_digits: int = Field(default=1, ge=1, description="Quantities written with fewer digits are not checked.")
    ignore: list[str] = Field(default_factory=list, description="Quantities never checked, as written ('0', '24/7').")
    allow_arguments: bool = Field(default=True, description="Whether the call's effective arguments ground anything.")
    argument_keys: list[str] = Field(
        default_factory=lambda: ["start", "end", "limit", "top_k", "query", "sql", "service", "level"],
        description="Which effective arguments are sources when allow_arguments is true. Each grounds only what it"
        " says: start/end times, dates and window lengths; limit/top_k statements about the limit; query, sql,"
        " service and level NEGATIVE_OBSERVATION analyses restating the query (and the limitations).",
    )


class ToolTextParams(BaseModel):
    """Parameters of the tool_text_as_instruction rule: how much shared wording counts as reproducing a span."""

    model_config = ConfigDict(extra="forbid")

    min_shared_words: int = Field(default=3, ge=2, description="Length of the shared run of words that counts.")
    min_content_words: int = Field(
        default=2, ge=1, description="How many words of that run must be more than a stopword ('the', 'is', 'to'...)."
    )


PARAMETER_MODELS: Mapping[str, type[BaseModel]] = MappingProxyType({
    "numeric_grounding": NumericGroundingParams,
    "tool_text_as_instruction": ToolTextParams,
})


class Rule(BaseModel):
    """Metadata of one rule as the operator sees and tunes it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    description: str = Field(min_length=1)
    enabled: bool = True
    severity: Severity = Severity.REJECT
    parameters: dict[str, Any] = Field(default_factory=dict)

    @property
    def codes(self) -> tuple[str, ...]:
        """The violation codes this rule can emit."""
        return RULE_CODES[self.id]


class RuleSet(BaseModel):
    """The whole rules file, validated."""

    model_config = ConfigDict(extra="forbid")

    rule_set_version: str = Field(min_length=1)
    rules: dict[str, Rule]
    numeric: NumericGroundingParams = Field(default_factory=NumericGroundingParams)

    @model_validator(mode="before")
    @classmethod
    def _ids_from_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "numeric" in data:
            raise ValueError(
                "unknown top-level key 'numeric': numeric grounding parameters go in [rules.numeric_grounding.parameters]"
            )
        if isinstance(data, dict) and isinstance(data.get("rules"), dict):
            rules = {k: {**v, "id": k} if isinstance(v, dict) else v for k, v in data["rules"].items()}
            data = {**data, "rules": rules}
        return data

    @model_validator(mode="after")
    def _check_rules(self) -> RuleSet:
        unknown = sorted(set(self.rules) - set(RULE_CODES))
        if unknown:
            raise ValueError(f"unknown rule id(s) {unknown}; known: {sorted(RULE_CODES)}")
        missing = sorted(set(RULE_CODES) - set(self.rules))
        if missing:
            raise ValueError(f"rule(s) {missing} missing from the rules file; every rule must be listed")
        for rule_id in sorted(LOCKED_RULES):
            rule = self.rules[rule_id]
            if not rule.enabled or rule.severity is not Severity.REJECT:
                raise ValueError(f"rule {rule_id!r} is locked: it must stay enabled with severity 'reject'")
        for rule in self.rules.values():
            model = PARAMETER_MODELS.get(rule.id)
            if model is None and rule.parameters:
                raise ValueError(f"rule {rule.id!r} takes no parameters, got {sorted(rule.parameters)}")
            if model is not None:
                model.model_validate(rule.parameters)  # unknown or bad parameters fail the load
        self.numeric = NumericGroundingParams.model_validate(self.rules["numeric_grounding"].parameters)
        return self

    def enabled_rules(self) -> list[Rule]:
        """The rules that run, in file order."""
        return [rule for rule in self.rules.values() if rule.enabled]

    def with_rule(self, rule_id: str, **changes: Any) -> RuleSet:
        """A copy with one rule's fields changed (validated like a file), e.g. for an operator preview or a test."""
        data = self.model_dump(exclude={"numeric"})
        data["rules"][rule_id].update(changes)
        return RuleSet.model_validate(data)


def parse_rules(text: str, source: str = "<string>") -> RuleSet:
    """Parse rules-file TOML text; RulesFileError with the source name on any problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesFileError(f"{source}: not valid TOML: {exc}") from exc
    try:
        return RuleSet.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors())
        raise RulesFileError(f"{source}: invalid rules file: {problems}") from exc


def load_rules(path: Path = DEFAULT_RULES_FILE) -> RuleSet:
    """Load and validate a rules file (Settings.diag_rules_file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesFileError(f"{path}: cannot read rules file: {exc}") from exc
    return parse_rules(text, str(path))
