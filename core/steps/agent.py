"""DiagnosisAgent: the ToolLoop configured with the three read-only tools, ending with one submit_diagnosis_draft."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import PublishedReport
from core.contracts.run import EventType, StopReason
from core.llm.model_step import DEADLINE_SLACK_S, LoopStopped, ModelStep, race
from core.llm.prompts import PromptLibrary
from core.llm.tool_loop import (
    LoopConfig,
    ToolLoop,
    ascii_json_size,
    budget_stop_reason,
    validation_summary,
)
from core.ports import AuditStore, ChatModel, ToolInvoker
from core.run import RunContext
from core.steps.first_look import FIRST_LOOK_NOTE, FirstLook, starting_messages
from core.steps.schemas import SUBMIT_DIAGNOSIS, diagnosis_tools, offered_names
from core.tools.args import normalised_arguments

__all__ = (
    "DEADLINE_SLACK_S", "AgentResult", "DiagnosisAgent", "LoopStopped", "ToolInvoker", "ascii_json_size",
    "budget_stop_reason", "normalised_arguments", "race", "render_previous_report", "validation_summary",
)

PREVIOUS_REPORT_LABEL = "Previous published report, not evidence for this run; its tool_call_ids are not citable"
CORRECTION_PROSE = (
    "Wire-format error: answer only with function calls. Call the tools you need, then call "
    f"{SUBMIT_DIAGNOSIS} exactly once with the whole draft. Do not answer in prose."
)


class AgentResult(BaseModel):
    """How the agent loop ended: the submitted draft (if any) and why it stopped."""

    draft: DiagnosisDraft | None = None
    stop_reason: StopReason
    steps: int = 0
    tool_calls: int = 0
    repeated_calls: int = 0


def render_previous_report(report: PublishedReport) -> str:
    """The previous published report as labelled context (never evidence)."""
    # The cited evidence of that run is kept for "Show evidence", never as context for this one.
    body = json.dumps(report.model_dump(mode="json", exclude={"evidence", "evidence_arguments", "question"}),
                      ensure_ascii=False)
    return f"{PREVIOUS_REPORT_LABEL}:\n{body}"


class DiagnosisAgent:
    """Plans, calls tools and writes the whole draft; budgets are enforced by the ToolBoundary and the loop's limits."""

    def __init__(
        self,
        model: ChatModel,
        model_name: str,
        boundary: ToolInvoker,
        prompts: PromptLibrary,
        audit: AuditStore,
        *,
        call_timeout_s: float = 60.0,
        corrective_turns: int = 1,
        tools: list[dict[str, Any]] | None = None,
        first_look: FirstLook | None = None,
    ) -> None:
        self.model_name = model_name
        self.first_look = first_look
        tools = tools or diagnosis_tools()
        config = LoopConfig(
            stage="agent", prompt="diagnosis_agent", tools=tools, tool_names=offered_names(tools),
            submit_name=SUBMIT_DIAGNOSIS, output=DiagnosisDraft, correction=CORRECTION_PROSE,
            corrective_turns=corrective_turns, normalise=normalised_arguments,
        )
        step = ModelStep(model, model_name, "agent", timeout_s=call_timeout_s, audit=audit)
        self._loop = ToolLoop(step, boundary, prompts, config)

    async def run(self, ctx: RunContext, previous_report: PublishedReport | None) -> AgentResult:
        """Run the loop until a draft is submitted or a budget, the deadline, cancel or the model stops it."""
        user = ctx.query if previous_report is None else f"{ctx.query}\n\n---\n{render_previous_report(previous_report)}"
        looked = await self.first_look.run(ctx) if self.first_look is not None else []
        starting = starting_messages(looked)
        if starting:
            user = f"{user}\n\n---\n{FIRST_LOOK_NOTE}"
        result = await self._loop.run(ctx, user, starting, {call_id: projection for call_id, _, _, projection in looked})
        if result.output is not None:
            await ctx.timeline.record(EventType.DRAFT_SUBMITTED, _draft_summary(result.output))
        return AgentResult(draft=result.output, stop_reason=result.stop_reason, steps=result.steps,
                           tool_calls=result.tool_calls, repeated_calls=result.repeated_calls)


def _draft_summary(draft: DiagnosisDraft) -> dict[str, Any]:
    return {
        "analyses": len(draft.analysis),
        "actions": len(draft.action_plan),
        "recommendations": len(draft.recommendations),
        "has_conclusion": draft.conclusion is not None,
    }
