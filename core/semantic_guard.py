"""LlmSemanticJudge: one isolated model call judging the whole draft against the verified snapshot (SPEC §6)."""

from __future__ import annotations

import json
import logging
from typing import Any

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import SemanticVerdict, SemanticVerdictKind, VerifiedEvidenceSnapshot
from core.llm.model import ChatModel, ModelUnavailable
from core.llm.wire import parse_json_object, system_message, user_message
from core.ports import AuditStore
from core.prompts import PromptLibrary

log = logging.getLogger(__name__)

SHORTENED_MARK = " …[shortened for review]"
ITEM_KEYS = ("evidence_blocks", "logs", "rows")
MIN_STRING_CHARS = 24
VERDICTS = {SemanticVerdictKind.SUPPORTED.value, SemanticVerdictKind.UNSUPPORTED.value}


def _size(payload: dict[str, Any]) -> int:
    return len(json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8"))


def _shorten_strings(node: Any, limit: int) -> Any:
    """Cut every string leaf longer than limit characters and mark it."""
    if isinstance(node, str):
        return node if len(node) <= limit else node[:limit] + SHORTENED_MARK
    if isinstance(node, list):
        return [_shorten_strings(item, limit) for item in node]
    if isinstance(node, dict):
        return {key: _shorten_strings(value, limit) for key, value in node.items()}
    return node


def _with_item_limit(projections: dict[str, dict[str, Any]], limit: int | None) -> dict[str, dict[str, Any]]:
    """Projections with the strings inside their item lists cut to limit characters (None: unchanged)."""
    if limit is None:
        return projections
    out: dict[str, dict[str, Any]] = {}
    for call_id, projection in projections.items():
        copy = dict(projection)
        for key in ITEM_KEYS:
            if isinstance(copy.get(key), list):
                copy[key] = _shorten_strings(copy[key], limit)
        out[call_id] = copy
    return out


def _longest_item_string(projections: dict[str, dict[str, Any]]) -> int:
    longest = 0

    def walk(node: Any) -> None:
        nonlocal longest
        if isinstance(node, str):
            longest = max(longest, len(node))
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    for projection in projections.values():
        for key in ITEM_KEYS:
            walk(projection.get(key))
    return longest


def build_judge_input(
    query: str, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot, cap_bytes: int
) -> tuple[dict[str, Any], bool]:
    """The exact judge input (query, draft, snapshot, warnings); snapshot item texts are shortened evenly to fit the cap."""

    def payload(projections: dict[str, dict[str, Any]], shortened: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "query": query,
            "draft": draft.model_dump(mode="json"),
            "snapshot": {"projections": projections, "effective_arguments": snapshot.effective_arguments},
            "warnings": [{"code": w.code, "path": w.path, "message": w.message} for w in snapshot.warnings],
        }
        if shortened:
            body["snapshot"]["note"] = "Some item texts were shortened evenly to fit the review size; they end with the marker."
        return body

    full = payload(snapshot.projections, False)
    if _size(full) <= cap_bytes:
        return full, False
    # Binary search the largest per-string limit that fits; every item string is cut to the same length.
    low, high = MIN_STRING_CHARS, max(MIN_STRING_CHARS, _longest_item_string(snapshot.projections))
    best = payload(_with_item_limit(snapshot.projections, low), True)
    while low <= high:
        middle = (low + high) // 2
        candidate = payload(_with_item_limit(snapshot.projections, middle), True)
        if _size(candidate) <= cap_bytes:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    if _size(best) > cap_bytes:
        log.warning("semantic guard input still %d bytes over the cap after shortening", _size(best) - cap_bytes)
    return best, True


def parse_verdict(content: str | None, output_cap_bytes: int) -> SemanticVerdict | None:
    """A well-formed {"verdict","reason"} answer, or None for anything else (prose, bad JSON, over the cap)."""
    if content is None or len(content.encode("utf-8")) > output_cap_bytes:
        return None
    answer = parse_json_object(content)
    if answer is None or answer.get("verdict") not in VERDICTS:
        return None
    reason = answer.get("reason", "")
    if not isinstance(reason, str):
        return None
    return SemanticVerdict(verdict=SemanticVerdictKind(answer["verdict"]), reason=reason.strip()[:1000])


class LlmSemanticJudge:
    """Implements SemanticJudge: frozen input, no tools, bounded retries, UNAVAILABLE when no well-formed verdict."""

    def __init__(
        self,
        model: ChatModel,
        model_name: str,
        prompts: PromptLibrary,
        audit: AuditStore | None = None,
        *,
        input_cap_bytes: int = 96 * 1024,
        output_cap_bytes: int = 4096,
        max_attempts: int = 3,
        timeout_s: float = 60.0,
    ) -> None:
        self.model = model
        self.model_name = model_name
        self.prompts = prompts
        self.audit = audit
        self.input_cap_bytes = input_cap_bytes
        self.output_cap_bytes = output_cap_bytes
        self.max_attempts = max(1, max_attempts)
        self.timeout_s = timeout_s

    async def judge(self, query: str, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot) -> SemanticVerdict:
        """Judge the whole draft against the snapshot; retry malformed answers and transport errors, then UNAVAILABLE."""
        body, shortened = build_judge_input(query, draft, snapshot, self.input_cap_bytes)
        messages = [system_message(self.prompts.get("semantic_guard")), user_message(json.dumps(body, ensure_ascii=False))]
        problems: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                reply = await self.model.complete(model=self.model_name, messages=messages, tools=None, timeout_s=self.timeout_s)
            except ModelUnavailable as exc:
                problems.append("unreachable" if exc.status_code is None else f"HTTP {exc.status_code}")
                continue
            if self.audit is not None:
                await self.audit.record_reasoning(snapshot.run_id, "semantic_guard", attempt, reply.reasoning)
            verdict = None if reply.tool_calls else parse_verdict(reply.content, self.output_cap_bytes)
            if verdict is not None:
                log.info("semantic guard run=%s verdict=%s attempt=%d shortened=%s", snapshot.run_id, verdict.verdict,
                         attempt, shortened)
                return verdict
            problems.append("malformed answer")
        reason = f"semantic guard unavailable after {self.max_attempts} attempts ({', '.join(problems)})"
        log.warning("run=%s %s", snapshot.run_id, reason)
        return SemanticVerdict(verdict=SemanticVerdictKind.UNAVAILABLE, reason=reason[:1000])
