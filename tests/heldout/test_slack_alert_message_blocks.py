"""Held-out shapes from Slack's Block Kit reference (docs.slack.dev/reference/block-kit/blocks): an alert app's message
with an empty `text` whose words are only in `rich_text` or `markdown` blocks, or in blocks inside a legacy
attachment. Written from the reference, not from what our renderers send."""

from __future__ import annotations

from typing import Any

from bot.alert_messages import alert_text


def _message(**fields: Any) -> dict[str, Any]:
    return {"type": "message", "subtype": "bot_message", "bot_id": "B0456GRAFANA", "channel": "C0123ALERTS",
            "ts": "1732920000.000100", "text": "", **fields}


def test_rich_text_sections_lists_quotes_and_preformatted_are_read() -> None:
    blocks = [{"type": "rich_text", "block_id": "Vrzsu", "elements": [
        {"type": "rich_text_section", "elements": [
            {"type": "text", "text": "FIRING: ", "style": {"bold": True}},
            {"type": "text", "text": "HighErrorRate on checkout-api"},
            {"type": "link", "url": "https://grafana.example.com/d/abc", "text": "dashboard"}]},
        {"type": "rich_text_list", "style": "bullet", "elements": [
            {"type": "rich_text_section", "elements": [{"type": "text", "text": "5xx ratio 86%"}]},
            {"type": "rich_text_section", "elements": [{"type": "text", "text": "since 23:00 UTC"}]}]},
        {"type": "rich_text_quote", "elements": [{"type": "text", "text": "runbook: pool exhaustion"}]},
        {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": "rate(http_errors_total[5m])"}]},
    ]}]
    text = alert_text(_message(blocks=blocks))
    for words in ("FIRING:", "HighErrorRate on checkout-api", "dashboard", "5xx ratio 86%", "since 23:00 UTC",
                  "runbook: pool exhaustion", "rate(http_errors_total[5m])"):
        assert words in text


def test_a_markdown_block_is_read() -> None:
    # the markdown block's `text` is a string of standard markdown, not a text object
    text = alert_text(_message(blocks=[{"type": "markdown", "text": "**FIRING** DiskFull on db-1: 97% used"}]))
    assert "DiskFull on db-1: 97% used" in text


def test_blocks_inside_an_attachment_are_read() -> None:
    attachment = {"color": "#E01E5A", "blocks": [
        {"type": "header", "text": {"type": "plain_text", "text": "PodCrashLooping"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*namespace* payments"}}]}
    text = alert_text(_message(attachments=[attachment]))
    assert "PodCrashLooping" in text
    assert "payments" in text


def test_deeply_nested_or_odd_blocks_do_not_break_it() -> None:
    deep: dict[str, Any] = {"type": "text", "text": "bottom"}
    for _ in range(200):
        deep = {"type": "rich_text_section", "elements": [deep]}
    odd = [{"type": "rich_text", "elements": [deep]}, {"type": "markdown"}, {"type": "image", "image_url": "x"},
           {"type": "rich_text", "elements": "not a list"}, "not a block", {"type": "section", "text": 7}]
    assert isinstance(alert_text(_message(text="top", blocks=odd)), str)
