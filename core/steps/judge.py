"""LlmSemanticJudge: one isolated model call judging the whole draft against the verified snapshot (SPEC §6)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import SemanticVerdict, SemanticVerdictKind, VerifiedEvidenceSnapshot
from core.llm.model import ModelUnavailable
from core.llm.model_step import ModelStep
from core.llm.prompts import PromptLibrary
from core.llm.wire import parse_json_object, system_message, user_message
from core.ports import AuditStore, ChatModel, Timeline
from core.run import shared_allowance

log = logging.getLogger(__name__)

SHORTENED_MARK = " …[shortened for review]"
ITEM_KEYS = ("evidence_blocks", "logs", "rows")
MIN_STRING_CHARS = 24
NO_TIME = "no time left in the run"
VERDICTS = frozenset({SemanticVerdictKind.SUPPORTED.value, SemanticVerdictKind.UNSUPPORTED.value})


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


def _with_limits(
    projections: dict[str, dict[str, Any]], char_limit: int | None, item_limit: int | None = None
) -> dict[str, dict[str, Any]]:
    """Projections with at most item_limit items per list and item strings cut to char_limit characters."""
    if char_limit is None and item_limit is None:
        return projections
    out: dict[str, dict[str, Any]] = {}
    for call_id, projection in projections.items():
        copy = dict(projection)
        for key in ITEM_KEYS:
            items = copy.get(key)
            if not isinstance(items, list):
                continue
            if item_limit is not None and len(items) > item_limit:
                copy["items_omitted_for_review"] = copy.get("items_omitted_for_review", 0) + len(items) - item_limit
                items = items[:item_limit]
            copy[key] = _shorten_strings(items, char_limit) if char_limit is not None else items
        out[call_id] = copy
    return out


def _longest(projections: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """The longest item string and the longest item list of the projections."""
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

    most = 0
    for projection in projections.values():
        for key in ITEM_KEYS:
            walk(projection.get(key))
            if isinstance(projection.get(key), list):
                most = max(most, len(projection[key]))
    return longest, most


def _largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The largest n in [low, high] with fits(n), assuming fits is monotone; None when even low does not fit."""
    best = None
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


def build_judge_input(
    query: str, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot, cap_bytes: int
) -> tuple[dict[str, Any], bool]:
    """The exact judge input (query, draft, snapshot, warnings); see _judge_input."""
    body, shortened, _ = _judge_input(query, draft, snapshot, cap_bytes)
    return body, shortened


def _judge_input(
    query: str, draft: DiagnosisDraft, snapshot: VerifiedEvidenceSnapshot, cap_bytes: int
) -> tuple[dict[str, Any], bool, str | None]:
    """The exact judge input (query, draft, snapshot, warnings); snapshot items are shortened evenly to fit the cap.

    First every item string is cut to the same length; if even the shortest allowed strings do not fit, every
    projection keeps the same number of leading items and says how many it omitted. The draft is never touched.
    Third: json.dumps(body, ensure_ascii=False) when it was already made to measure the body (else None).
    """

    def payload(char_limit: int | None, item_limit: int | None = None) -> dict[str, Any]:
        shortened = char_limit is not None or item_limit is not None
        body: dict[str, Any] = {
            "query": query,
            "draft": draft.model_dump(mode="json"),
            "snapshot": {"projections": _with_limits(snapshot.projections, char_limit, item_limit),
                         "effective_arguments": snapshot.effective_arguments},
            "warnings": [{"code": w.code, "path": w.path, "message": w.message} for w in snapshot.warnings],
        }
        if shortened:
            body["snapshot"]["note"] = ("Item texts were shortened evenly to fit the review size (they end with the "
                                        "marker); items_omitted_for_review counts items left out.")
        return body

    def fits(body: dict[str, Any]) -> bool:
        return _size(body) <= cap_bytes

    full = payload(None)
    try:
        # Plain JSON (always, in practice): the text the judge sends, whose size is also _size(full).
        text: str | None = json.dumps(full, ensure_ascii=False)
    except (TypeError, ValueError):
        text = None
    if (len(text.encode("utf-8")) if text is not None else _size(full)) <= cap_bytes:
        return full, False, text
    longest, most = _longest(snapshot.projections)
    if fits(payload(MIN_STRING_CHARS)):
        chars = _largest_fitting(MIN_STRING_CHARS, max(MIN_STRING_CHARS, longest), lambda n: fits(payload(n)))
        return payload(chars if chars is not None else MIN_STRING_CHARS), True, None
    items = _largest_fitting(1, max(1, most), lambda n: fits(payload(MIN_STRING_CHARS, n)))
    best = payload(MIN_STRING_CHARS, items if items is not None else 1)
    if not fits(best):
        log.warning("semantic guard input still %d bytes over the cap after shortening", _size(best) - cap_bytes)
    return best, True, None


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
    """Implements SemanticJudge: frozen input, no tools, bounded retries, UNAVAILABLE when no well-formed verdict.

    The retries share the time the run has left (time_left_s): a hanging reviewer ends UNAVAILABLE in time for
    the fallback to be posted before the run's deadline, whatever the per-call timeout setting says.
    """

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
        self.model_name = model_name
        self.prompts = prompts
        self.input_cap_bytes = input_cap_bytes
        self.output_cap_bytes = output_cap_bytes
        self.max_attempts = max(1, max_attempts)
        self._step = ModelStep(model, model_name, "semantic_guard", timeout_s=timeout_s, audit=audit)

    async def judge(
        self,
        query: str,
        draft: DiagnosisDraft,
        snapshot: VerifiedEvidenceSnapshot,
        *,
        time_left_s: float | None = None,
        timeline: Timeline | None = None,
    ) -> SemanticVerdict:
        """Judge the whole draft against the snapshot; retry malformed answers and transport errors, then UNAVAILABLE."""
        body, shortened, text = _judge_input(query, draft, snapshot, self.input_cap_bytes)
        if text is None:
            text = json.dumps(body, ensure_ascii=False)
        messages = [system_message(self.prompts.get("semantic_guard")), user_message(text)]
        remaining = shared_allowance(time_left_s)
        problems: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            left = remaining()
            if left is not None and left <= 0:
                problems.append(NO_TIME)
                break
            try:
                reply = await self._step.call(messages, None, step=attempt, run_id=snapshot.run_id, timeline=timeline,
                                              time_left_s=left)
            except ModelUnavailable as exc:
                problems.append("unreachable or timed out" if exc.status_code is None else f"HTTP {exc.status_code}")
                continue
            verdict = None if reply.tool_calls else parse_verdict(reply.content, self.output_cap_bytes)
            if verdict is not None:
                log.info("semantic guard run=%s verdict=%s attempt=%d shortened=%s", snapshot.run_id, verdict.verdict,
                         attempt, shortened)
                return verdict
            problems.append("malformed answer")
        tried = sum(1 for p in problems if p != NO_TIME)
        reason = f"semantic guard unavailable after {tried} attempt{'s' if tried != 1 else ''} ({', '.join(problems)})"
        log.warning("run=%s %s", snapshot.run_id, reason)
        return SemanticVerdict(verdict=SemanticVerdictKind.UNAVAILABLE, reason=reason[:1000])
