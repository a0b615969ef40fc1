"""Block Kit limits: whatever the draft, the message fits Slack's caps and shows a truncation marker when cut."""

from __future__ import annotations

import json
from typing import Any

from bot.render.limits import MAX_BLOCKS, MAX_TOTAL_CHARS, clamp_block, clip, fit_blocks
from bot.render.message import render_outcome
from bot.render.mrkdwn import context, header, section
from core.contracts.evidence import EvidenceStatus
from core.contracts.release import FallbackMessage, ObservedFact, Outcome, ReleaseOutcome
from testkit.tool_names import ToolName
from tests.bot.oversized import max_outcome
from tests.fakes.slack_server import validate_blocks


def test_max_draft_fits_every_limit_with_marker() -> None:
    """20 analyses x 1,000 chars, 10 actions, 10 recommendations, 20 missing items: accepted by Slack's checks."""
    msg = render_outcome(max_outcome("run_big"), 12.5)
    assert validate_blocks(msg.blocks) is None
    assert len(json.dumps(msg.blocks)) <= MAX_TOTAL_CHARS
    assert len(msg.blocks) <= MAX_BLOCKS
    assert "…shortened to fit Slack's message limits" in json.dumps(msg.blocks, ensure_ascii=False)
    assert msg.blocks[-1]["type"] == "context_actions"  # the footer (👍/👎 last) survives truncation
    assert msg.blocks[-2]["type"] == "actions"
    assert "Show all findings" in json.dumps(msg.blocks[-2])
    assert any("Limitations" in b.get("text", {}).get("text", "") for b in msg.blocks)  # shrunk evenly, not dropped
    assert len(msg.text) <= 3000


def test_small_report_is_not_truncated() -> None:
    """A report under the limits is sent as is, without a marker."""
    blocks = fit_blocks([header("Diagnosis"), section("short")], [context("run `r`")], run_id="r")
    assert "truncated" not in json.dumps(blocks)
    assert len(blocks) == 3


def test_too_many_blocks_are_cut_to_fifty() -> None:
    """More than 50 small blocks are cut to 50 including marker and footer."""
    blocks = fit_blocks([section(f"line {i}") for i in range(200)], [context("footer")], run_id="r")
    assert len(blocks) == MAX_BLOCKS
    assert blocks[-1] == context("footer")
    assert validate_blocks(blocks) is None
    assert "…shortened to fit Slack's message limits" in json.dumps(blocks[-2], ensure_ascii=False), "the cut is visible"
    assert blocks[0] == section("line 0"), "the head of the report is kept"


def test_per_block_caps_apply() -> None:
    """Header 150, section 3,000, context 10 elements: each clamped."""
    assert len(clamp_block(header("h" * 400))["text"]["text"]) == 150
    assert len(clamp_block(section("s" * 5000))["text"]["text"]) == 3000
    ctx = clamp_block(context(*[f"e{i}" for i in range(15)]))
    assert len(ctx["elements"]) == 10
    assert "e14" in ctx["elements"][-1]["text"]


def test_clip_never_splits_an_escape() -> None:
    """Clipping inside `&amp;` drops the partial entity instead of leaving a broken one."""
    assert clip("abc&amp;def", 6) == "abc…"
    assert clip("abcdef", 10) == "abcdef"
    assert clip("abcdef", 4) == "abc…"


def test_huge_fallback_fits() -> None:
    """A fallback with many long observed facts and next steps fits too."""
    facts = [ObservedFact(text="x" * 400, tool_call_id=f"c{i}", tool_name=ToolName.QUERY_LOGS,
                          evidence_status=EvidenceStatus.EVIDENCE_FOUND) for i in range(60)]
    fb = FallbackMessage(stage="s" * 2000, reason="r" * 2000, observed_facts=facts, next_steps=["n" * 1000] * 30)
    msg = render_outcome(ReleaseOutcome(run_id="run_f", outcome=Outcome.SAFE_FALLBACK, fallback=fb))
    assert validate_blocks(msg.blocks) is None
    assert len(msg.blocks) <= MAX_BLOCKS
    assert len(json.dumps(msg.blocks)) <= MAX_TOTAL_CHARS
    assert "…shortened to fit Slack's message limits" in json.dumps(msg.blocks, ensure_ascii=False)


def test_clamp_block_returns_a_copy_that_shares_nothing_mutable() -> None:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": "s" * 5000},
             "accessory": {"type": "button", "value": "v", "options": [{"k": 1}, (2, 3)]}}
    clamped = clamp_block(block)
    assert len(block["text"]["text"]) == 5000  # the input is left as it was
    assert clamped["accessory"] == block["accessory"]
    assert clamped["accessory"] is not block["accessory"]
    assert clamped["accessory"]["options"][0] is not block["accessory"]["options"][0]
