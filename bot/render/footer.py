"""The footer every final message ends with: run id, duration, outcome, and a "View trace" button."""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import code, context, escape, plain

VIEW_TRACE_ACTION = "view_trace"
OUTCOME_WORDS = {"SUCCESS": "verified", "SAFE_FALLBACK": "not verified", "FAILURE": "did not finish"}


def footer(run_id: str, duration_s: float | None, outcome: str, fallback_type: str | None = None) -> list[dict[str, Any]]:
    """Context line and trace button; the button's value is the run id (authorised again on click).

    The outcome is said in words (the codes are in the message metadata and the trace)."""
    del fallback_type  # the body says why; the footer stays one short line
    parts = [f"run {code(run_id)}"]
    if duration_s is not None:
        parts.append(f"{duration_s:.1f} s")
    parts.append(escape(OUTCOME_WORDS.get(outcome, outcome.lower())))
    return [
        context(" · ".join(parts)),
        {
            "type": "actions",
            "block_id": "diag_footer",
            "elements": [
                {"type": "button", "action_id": VIEW_TRACE_ACTION, "text": plain("View trace"), "value": run_id[:2000]}
            ],
        },
    ]
