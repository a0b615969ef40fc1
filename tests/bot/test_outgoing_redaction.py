"""Render-time redaction: whatever a renderer produced, no secret leaves through the Web API client or respond()."""

from __future__ import annotations

import json

from bot.outgoing import OutgoingRedaction, RedactingWebClient
from core.contracts.evidence import EvidenceStatus
from core.contracts.release import FallbackMessage, ObservedFact, Outcome, ReleaseOutcome
from testkit.tool_names import ToolName
from tests.bot.conftest import Harness
from tests.bot.fake_chat import success_outcome
from tests.bot.slack_requests import mention
from tests.fakes.slack_server import FakeSlack

STRIPE = "sk_live_51H8xYzAbCdEfGhIjKlMnOpQrSt"
DSN_SECRET = "p@ss/w0rd"


def _leaky_outcome(run_id: str) -> ReleaseOutcome:
    """A published report whose draft text quotes secrets (as an obeying model would write it)."""
    outcome = success_outcome(run_id)
    assert outcome.report is not None
    draft = outcome.report.draft
    assert draft.conclusion is not None
    draft.conclusion.text = f"The checkout uses {STRIPE} against postgres://app:{DSN_SECRET}@db:5432/shop."
    return outcome


def _leaky_fallback(run_id: str) -> ReleaseOutcome:
    fact = ObservedFact(text=f"query_logs checkout: SMTP_PASS=Gr33nApple! and {STRIPE}", tool_call_id="call_1",
                        tool_name=ToolName.QUERY_LOGS, evidence_status=EvidenceStatus.EVIDENCE_FOUND)
    fallback = FallbackMessage(stage="evidence check", reason="x", observed_facts=[fact], next_steps=[f"rotate {STRIPE}"])
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.SAFE_FALLBACK, fallback=fallback)


def _all_calls(slack: FakeSlack) -> str:
    return json.dumps([c.params for c in slack.calls], ensure_ascii=False)


async def test_a_report_quoting_secrets_reaches_slack_redacted(harness: Harness) -> None:
    """The final message is scrubbed at the client: the secret's tail is gone, its type prefix stays."""
    harness.chat.make_outcome = _leaky_outcome
    await harness.send.event(mention(ts="71.0"))
    await harness.settle()
    sent = _all_calls(harness.slack)
    assert "sk_live_…[redacted]" in sent
    assert STRIPE[8:] not in sent
    assert DSN_SECRET not in sent


async def test_a_fallback_quoting_secrets_reaches_slack_redacted(harness: Harness) -> None:
    """Observed facts and next steps of a fallback go through the same pass."""
    harness.chat.make_outcome = _leaky_fallback
    await harness.send.event(mention(ts="72.0"))
    await harness.settle()
    sent = _all_calls(harness.slack)
    assert "Gr33nApple" not in sent
    assert STRIPE[8:] not in sent


async def test_respond_is_redacted_too(harness: Harness) -> None:
    """Command answers (response_url) pass through the respond() wrapper: a trace whose stored timeline holds a
    secret (this double stores it unredacted) is scrubbed on the way out."""
    harness.chat.add_run("run_abc", "T1", "C1")
    harness.chat.events["run_abc"][0].summary["note"] = f"SMTP_PASS=Gr33nApple! {STRIPE}"
    status, _ = await harness.send.command("trace run_abc", user="U5", response_url=harness.slack.response_url())
    assert status == 200
    answer = json.dumps(await harness.slack.next_response(), ensure_ascii=False)
    assert "Gr33nApple" not in answer
    assert STRIPE[8:] not in answer
    assert "SMTP_PASS=[redacted]" in answer


async def test_wrapping_keeps_the_client_configuration(fake_slack: FakeSlack) -> None:
    """A wrapped client talks to the same server with the same token; wrapping twice is the same client."""
    from slack_sdk.web.async_client import AsyncWebClient

    plain = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url)
    wrapped = RedactingWebClient.wrap(plain, OutgoingRedaction())
    assert RedactingWebClient.wrap(wrapped, OutgoingRedaction()) is wrapped
    assert (wrapped.token, wrapped.base_url) == (plain.token, plain.base_url)
    await wrapped.chat_postMessage(channel="C1", text=f"key {STRIPE}")
    assert fake_slack.calls_of("chat.postMessage")[-1].params["text"] == "key sk_live_…[redacted]"


def test_scrub_walks_blocks_and_metadata() -> None:
    """Every string at any depth is redacted; other values are kept."""
    scrub = OutgoingRedaction().scrub
    payload = {"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"a {STRIPE}"}}], "n": 3,
               "metadata": {"event_payload": {"note": "SMTP_PASS=Gr33nApple!"}}}
    out = scrub(payload)
    assert out["blocks"][0]["text"]["text"] == "a sk_live_…[redacted]"
    assert out["metadata"]["event_payload"]["note"] == "SMTP_PASS=[redacted]"
    assert out["n"] == 3
