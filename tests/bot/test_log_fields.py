"""Log lines of a Slack turn carry its session, and once the run is known its run_id — also the delivery's lines
written after the core has finished (DIAG_LOG_FORMAT=json)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from core.observability.log_setup import configure_logging
from tests.bot.conftest import Harness
from tests.bot.slack_requests import mention
from tests.fakes import slack_faults as faults


@pytest.mark.usefixtures("restore_logging")
async def test_delivery_lines_carry_the_session_and_the_run(harness: Harness) -> None:
    """The placeholder post and every delivery of the final message fail: the placeholder warning carries the
    session, the 'not delivered' error carries the session and the run id."""
    stream = io.StringIO()
    configure_logging(logging.INFO, "json", stream)
    harness.slack.plan.inject("chat.postMessage", faults.json_error("channel_not_found"), times=None)
    await harness.send.event(mention(ts="81.0"))
    await harness.settle()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    placeholder = [line for line in lines if "placeholder not posted" in str(line["message"])]
    undelivered = [line for line in lines if "not delivered" in str(line["message"])]
    assert placeholder
    assert undelivered
    assert all(line["session"] == "T1:C1:81.0" for line in placeholder + undelivered), lines
    assert undelivered[0]["run_id"] == "run_1"
