"""Interactive buttons: "View trace" shows the run's timeline ephemerally, with the same authorisation."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.commands import safe_trace_message
from bot.deps import BotDeps
from bot.render.footer import VIEW_TRACE_ACTION
from bot.verify import can_respond, click_refusal, register_verify_actions, who_clicked


def register_actions(app: AsyncApp, deps: BotDeps) -> None:
    """Attach the view_trace, show_evidence, show_all_findings and feedback action listeners."""
    register_verify_actions(app, deps)

    @app.action(VIEW_TRACE_ACTION)
    async def on_view_trace(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        if not can_respond(body, "view trace"):
            return
        team, user = who_clicked(body)
        if (why := await click_refusal(deps, body)) is not None:
            msg: dict[str, Any] = {"text": why}
        else:
            msg = await safe_trace_message(deps, str(action.get("value") or ""), team, user)
        await respond(response_type="ephemeral", replace_original=False, **msg)
