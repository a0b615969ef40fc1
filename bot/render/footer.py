"""The footer every final message ends with: run id, duration, outcome in words, buttons, and 👍/👎 feedback."""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import code, context, escape, plain

VIEW_TRACE_ACTION = "view_trace"
SHOW_ALL_ACTION = "show_all_findings"
FEEDBACK_ACTION = "diag_feedback"
OUTCOME_WORDS = {"SUCCESS": "verified", "SAFE_FALLBACK": "not verified", "FAILURE": "did not finish"}


def feedback_value(vote: str, run_id: str) -> str:
    """A feedback button's value: the vote and the run it is about."""
    return f"{vote}|{run_id}"[:2000]


def feedback_block(run_id: str, *, plain_buttons: bool = False) -> dict[str, Any]:
    """👍/👎 as Slack's feedback buttons (a context_actions block), or as two ordinary buttons where those are off."""
    if plain_buttons:
        return {"type": "actions", "block_id": "diag_feedback", "elements": [
            {"type": "button", "action_id": f"{FEEDBACK_ACTION}_up", "text": plain("👍"), "value": feedback_value("up", run_id)},
            {"type": "button", "action_id": f"{FEEDBACK_ACTION}_down", "text": plain("👎"),
             "value": feedback_value("down", run_id)},
        ]}
    return {"type": "context_actions", "block_id": "diag_feedback", "elements": [{
        "type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
        "positive_button": {"text": plain("👍"), "value": feedback_value("up", run_id),
                            "accessibility_label": "This answer was useful"},
        "negative_button": {"text": plain("👎"), "value": feedback_value("down", run_id),
                            "accessibility_label": "This answer was not useful"},
    }]}


def footer(run_id: str, duration_s: float | None, outcome: str, fallback_type: str | None = None, *,
           show_all: bool = False, feedback: bool = True, plain_feedback: bool = False) -> list[dict[str, Any]]:
    """Context line, buttons (values are the run id, authorised again on click) and the feedback block.

    The outcome is said in words (the codes are in the message metadata and the trace)."""
    del fallback_type  # the body says why; the footer stays one short line
    parts = [f"run {code(run_id)}"]
    if duration_s is not None:
        parts.append(f"{duration_s:.1f} s")
    parts.append(escape(OUTCOME_WORDS.get(outcome, outcome.lower())))
    buttons = [{"type": "button", "action_id": VIEW_TRACE_ACTION, "text": plain("View trace"), "value": run_id[:2000]}]
    if show_all:
        buttons.insert(0, {"type": "button", "action_id": SHOW_ALL_ACTION, "text": plain("Show all findings"),
                           "value": run_id[:2000]})
    blocks = [context(" · ".join(parts)), {"type": "actions", "block_id": "diag_footer", "elements": buttons}]
    if feedback and run_id:
        blocks.append(feedback_block(run_id, plain_buttons=plain_feedback))
    return blocks
