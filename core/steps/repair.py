"""LlmEvidenceRepairer: one structured repair of a draft's citations after an evidence failure (SPEC §6).

The model may re-bind or drop citations and drop items; it may not add facts. That last rule is also
enforced here, deterministically: a repaired draft that adds analyses, texts, numbers or uncitable ids is
rejected (None), whatever the model says.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence

from pydantic import ValidationError

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CallSummary
from core.contracts.release import Violation
from core.llm.model import ModelReply, ModelUnavailable
from core.llm.model_step import ModelStep
from core.llm.prompts import PromptLibrary
from core.llm.tool_loop import ECHOED_CONTENT_CHARS, validation_summary
from core.llm.wire import assistant_message, decode_arguments, system_message, tool_message, user_message
from core.ports import AuditStore, ChatModel, Timeline
from core.run import shared_allowance
from core.steps.schemas import SUBMIT_DIAGNOSIS, repair_tools

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _derived(new: str, old: str) -> bool:
    """True when new says nothing old did not: every word of new occurs in old (shortening and removal only)."""
    return _words(new) <= _words(old)


def added_facts(original: DiagnosisDraft, repaired: DiagnosisDraft, citable: Iterable[str]) -> list[str]:
    """Reasons the repaired draft adds something the original did not have (empty when it only re-binds or drops)."""
    problems: list[str] = []
    allowed_ids = set(citable) | {i for a in original.analysis for i in a.tool_call_ids}
    before = {a.analysis_id: a for a in original.analysis}
    for index, item in enumerate(repaired.analysis):
        source = before.get(item.analysis_id)
        if source is None:
            problems.append(f"analysis[{index}]: new analysis id")
            continue
        if not _derived(item.text, source.text):
            problems.append(f"analysis[{index}]: text adds words")
        if any(i not in allowed_ids for i in item.tool_call_ids):
            problems.append(f"analysis[{index}]: cites an id that is neither referencable nor in the original")
    if repaired.conclusion is not None and (
        original.conclusion is None or not _derived(repaired.conclusion.text, original.conclusion.text)
    ):
        problems.append("conclusion: new or extended")
    for index, action in enumerate(repaired.action_plan):
        sources = [a for a in original.action_plan if _derived(action.action, a.action)]
        if not sources:
            problems.append(f"action_plan[{index}]: new action")
        elif not action.requires_human_confirmation and all(a.requires_human_confirmation for a in sources):
            problems.append(f"action_plan[{index}]: human confirmation removed")
    for index, rec in enumerate(repaired.recommendations):
        if not any(_derived(rec.text, r.text) for r in original.recommendations):
            problems.append(f"recommendations[{index}]: new recommendation")
    known_numbers = set(re.findall(r"\d+", original.model_dump_json()))
    limitation_text = " ".join([repaired.limitations.scope, *repaired.limitations.missing_info])
    if any(n not in known_numbers for n in re.findall(r"\d+", limitation_text)):
        problems.append("limitations: new numbers")
    return problems


class LlmEvidenceRepairer:
    """Implements EvidenceRepairer: one model call offering only submit_diagnosis_draft, one corrective turn."""

    def __init__(
        self,
        model: ChatModel,
        model_name: str,
        prompts: PromptLibrary,
        audit: AuditStore | None = None,
        run_id: str | None = None,
        *,
        timeout_s: float = 60.0,
        strict: bool = False,
    ) -> None:
        self.model_name = model_name
        self.prompts = prompts
        self.run_id = run_id
        self._step = ModelStep(model, model_name, "evidence_repair", timeout_s=timeout_s, audit=audit)
        self._tools = repair_tools(strict=strict)

    async def repair(
        self,
        query: str,
        draft: DiagnosisDraft,
        violations: Sequence[Violation],
        referencable: Sequence[CallSummary],
        *,
        run_id: str | None = None,
        time_left_s: float | None = None,
        timeline: Timeline | None = None,
    ) -> DiagnosisDraft | None:
        """At most one repair (plus one corrective turn on a wire-format mistake); None when nothing usable came back.

        Both calls share time_left_s (what the run can give the repair), whatever the per-call setting says."""
        body = {
            "query": query,
            "draft": draft.model_dump(mode="json"),
            "violations": [{"code": v.code, "path": v.path, "message": v.message} for v in violations],
            "referencable_calls": [c.model_dump(mode="json") for c in referencable],
        }
        messages = [system_message(self.prompts.get("evidence_repair")), user_message(json.dumps(body, ensure_ascii=False))]
        remaining = shared_allowance(time_left_s)
        for attempt in (1, 2):
            left = remaining()
            if left is not None and left <= 0:
                log.warning("evidence repair: no time left in the run")
                return None
            try:
                reply = await self._step.call(messages, self._tools, step=attempt, run_id=run_id or self.run_id,
                                              timeline=timeline, time_left_s=left)
            except ModelUnavailable:
                log.warning("evidence repair: model unavailable")
                return None
            repaired, correction = self._read(reply, messages)
            if repaired is not None:
                problems = added_facts(draft, repaired, (c.tool_call_id for c in referencable))
                if problems:
                    log.info("evidence repair rejected: %s", "; ".join(problems))
                    return None
                return repaired
            log.info("evidence repair wire-format mistake (attempt %d)", attempt)
            messages.append(correction)
        return None

    def _read(self, reply: ModelReply, messages: list[dict[str, object]]) -> tuple[DiagnosisDraft | None, dict[str, object]]:
        """The submitted draft, or None and the corrective message to send (history extended in place)."""
        calls = [c for c in reply.tool_calls if c.name == SUBMIT_DIAGNOSIS]
        if not calls:
            messages.append({"role": "assistant", "content": (reply.content or "")[:ECHOED_CONTENT_CHARS]})
            return None, user_message(f"Answer with exactly one call of {SUBMIT_DIAGNOSIS} holding the whole repaired draft.")
        call = calls[0]
        call_id = call.id or "repair_1"
        messages.append(assistant_message(reply.content, [call], [call_id]))
        arguments = decode_arguments(call.arguments)
        if arguments is None:
            return None, tool_message(call_id, f"Wire-format error: the arguments of {SUBMIT_DIAGNOSIS} must be one JSON object.")
        try:
            return DiagnosisDraft.model_validate(arguments), {}
        except ValidationError as exc:
            return None, tool_message(call_id, f"Wire-format error: the draft violates its schema ({validation_summary(exc)}).")
