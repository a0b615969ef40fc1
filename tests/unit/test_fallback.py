"""The fallback factory: observed facts from projections only, stage words, next steps, source labels."""

from __future__ import annotations

import re

import pytest

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, ToolError
from core.contracts.release import FailureCause, FallbackStage
from core.release.fallback import FACT_MAX, STAGE_TEXT, build_fallback, failure_fallback, observed_facts
from core.release.sources import call_summaries, source_label, window_text
from core.release.wording import FAILURE_STAGE, FAILURE_STEP, failure_cause
from testkit.release import error_record, knowledge_record, logs_record, sql_record
from testkit.tool_names import ToolName
from tests.unit.test_guard_codes import E1, K1, L0, L1, RUN, S1, run_records


def test_found_facts_come_first_then_no_evidence_then_errors() -> None:
    """Facts are ordered FOUND, NO_EVIDENCE, ERROR (call order within each) and name their sources."""
    facts = observed_facts(run_records())
    assert [f.tool_call_id for f in facts] == [L1, S1, K1, L0, E1]
    assert [f.evidence_status for f in facts] == [EvidenceStatus.EVIDENCE_FOUND] * 3 + [
        EvidenceStatus.NO_EVIDENCE,
        EvidenceStatus.ERROR,
    ]
    assert facts[0].tool_name == ToolName.QUERY_LOGS


def test_logs_fact_states_count_window_and_the_telling_lines() -> None:
    """A FOUND logs fact says how many lines matched and in which window; the lines are shown with time and level."""
    fact = observed_facts(run_records())[0]
    assert fact.text == ('Logs of order-service matching "HikariPool" at level ERROR between 22:30 and 23:30 UTC on '
                         "2026-11-29: 37 matching lines.")
    assert "query_logs" not in fact.text
    assert any(line.endswith("HikariPool-1 - Connection is not available, request timed out after 30000ms.")
               or "HikariPool-1 - Connection is not available" in line for line in fact.lines)
    assert re.match(r"\d\d:\d\d:\d\d ERROR ", fact.lines[0])


def test_sql_and_knowledge_facts() -> None:
    """SQL facts carry a small table with column names (never a Python list); runbook facts say what the runbook says."""
    facts = {f.tool_call_id: f for f in observed_facts(run_records())}
    assert facts[S1].text.startswith('Database query "SELECT')
    assert facts[S1].text.endswith(": 1 row.")
    table = facts[S1].table
    assert table is not None
    assert table.columns == ["service", "version", "deployed_at"]
    assert all(isinstance(c, str) for row in table.rows for c in row)
    assert "[" not in facts[S1].text
    assert facts[K1].text.startswith("Runbook db/hikari.md § Pool exhaustion matched")
    assert "not an observation of this environment" in facts[K1].text
    assert facts[K1].lines


def test_sql_fact_shows_the_rows_that_tell_not_the_first() -> None:
    """Of many pool samples, the saturated ones (active = max, idle 0) are shown, not the first calm rows."""
    rows = [[f"2026-11-20 14:{i:02d}:00", 20, 30, 50] for i in range(10)] + [["2026-11-20 14:30:00", 50, 0, 50]]
    record = sql_record(RUN, "s", "SELECT ts, active, idle, max FROM pool_stats", ["ts", "active", "idle", "max"], rows)
    [fact] = observed_facts([record], question="why is the checkout pool exhausted?")
    assert fact.table is not None
    assert ["2026-11-20 14:30:00", "50", "0", "50"] in fact.table.rows
    assert len(fact.table.rows) <= 5
    assert fact.table.total_rows == 11


def test_sql_rows_naming_what_the_question_names_come_first() -> None:
    """A row holding a word of the question (a service name) is among the rows shown."""
    rows = [[f"svc-{i}", "1.0"] for i in range(20)] + [["checkout-api", "2.3"]]
    record = sql_record(RUN, "s", "SELECT service, version FROM deploys", ["service", "version"], rows)
    [fact] = observed_facts([record], question="what changed in checkout-api?")
    assert fact.table is not None
    assert ["checkout-api", "2.3"] in fact.table.rows


def test_errors_are_listed_as_could_not_run() -> None:
    """Calls that ended in ERROR, or FAILED, are 'could not run: <code>', never evidence."""
    failed = logs_record(RUN, "call_failed", [("2026-11-29T23:00:00Z", "ERROR", "x")]).model_copy(
        update={"state": InvocationState.FAILED, "projection": None, "error": ToolError(code="TIMEOUT", message="slow")}
    )
    facts = observed_facts([run_records()[4], failed])
    assert "the read-only SQL check refused it" in facts[0].text
    assert facts[1].text.endswith("could not run: the backend did not answer in time.")
    assert all("could not run" in f.text for f in facts)
    assert not any("SQL_REFUSED" in f.text or "TIMEOUT" in f.text for f in facts)
    assert all(f.evidence_status is EvidenceStatus.ERROR for f in facts)


NOT_HEALTHY = re.compile(
    r"healthy|ruled out|\bOK\b|\bfine\b|no (?:problem|issue)s?\b|all good|normal|\bresolved\b", re.IGNORECASE
)


@pytest.mark.parametrize(
    "record",
    [
        logs_record(RUN, "n1", [], service="payment-service", query="timeout"),
        sql_record(RUN, "n2", "SELECT * FROM orders WHERE status = 'FAILED'", ["id"], []),
        knowledge_record(RUN, "n3", "kafka lag"),
    ],
    ids=["logs", "sql", "knowledge"],
)
def test_no_evidence_is_never_phrased_as_health(record: CanonicalRecord) -> None:
    """NO_EVIDENCE facts say only that nothing matched; any mention of health is explicitly negated."""
    [fact] = observed_facts([record])
    assert "no " in fact.text.lower()
    for match in NOT_HEALTHY.finditer(fact.text):
        assert fact.text[: match.start()].endswith("this does not show the service is "), fact.text


def test_logs_no_evidence_wording_is_exact() -> None:
    """The logs NO_EVIDENCE fact names the query, service and window and says it does not show health."""
    [fact] = observed_facts([logs_record(RUN, "n1", [], service="payment-service", query="timeout", level=None)])
    assert fact.text == (
        'Logs of payment-service: no lines matched "timeout" between 22:30 and 23:30 UTC on 2026-11-29'
        " — this does not show the service is healthy."
    )


def test_facts_are_bounded_in_number_and_length() -> None:
    """At most `limit` facts, each at most 400 characters, FOUND kept first when cutting."""
    long_line = "x" * 5000
    records = [logs_record(RUN, f"c{i}", [("2026-11-29T23:00:00Z", "ERROR", f"{i} {long_line}")], query="q" * 500)
               for i in range(12)]
    records.insert(0, logs_record(RUN, "none", []))
    facts = observed_facts(records, limit=5)
    assert len(facts) == 5
    assert all(len(f.text) <= FACT_MAX for f in facts)
    assert all(f.evidence_status is EvidenceStatus.EVIDENCE_FOUND for f in facts)
    assert observed_facts(records, limit=0) == []


def test_pending_calls_and_other_runs_are_left_out() -> None:
    """Pending calls observed nothing yet; records of another run never appear in this run's fallback."""
    pending = logs_record(RUN, "p", [("2026-11-29T23:00:00Z", "ERROR", "x")]).model_copy(
        update={"state": InvocationState.PENDING}
    )
    foreign = logs_record("other-run", "f", [("2026-11-29T23:00:00Z", "ERROR", "foreign")])
    message = build_fallback([pending, foreign, *run_records()], FallbackStage.EVIDENCE_CHECK, "reason", run_id=RUN)
    ids = [f.tool_call_id for f in message.observed_facts]
    assert "p" not in ids
    assert "f" not in ids
    assert len(ids) == 5


def test_secrets_in_arguments_are_redacted_in_facts() -> None:
    """A secret the agent put in a query argument does not reach the fallback."""
    record = sql_record(RUN, "s", "SELECT * FROM users WHERE password='hunter2secret'", ["id"], [[1]])
    [fact] = observed_facts([record])
    assert "hunter2secret" not in fact.text


def test_next_steps_follow_from_what_was_observed() -> None:
    """Next steps name the service and window seen, widening the empty query, the runbook found, the failed call and the trace."""
    message = build_fallback(run_records(), FallbackStage.EVIDENCE_CHECK, "A sentence.", run_id=RUN)
    steps = "\n".join(message.next_steps)
    assert "Check order-service's dashboards" in steps
    assert 'Look at order-service\'s logs for "OutOfMemoryError" over a wider window' in steps
    assert "runbook db/hikari.md § Pool exhaustion" in steps
    assert "the read-only SQL check refused it" in steps
    assert "SQL_REFUSED" not in steps
    assert f"`/diag trace {RUN}`" in steps
    assert message.stage == STAGE_TEXT[FallbackStage.EVIDENCE_CHECK]
    assert message.reason == "A sentence."


def test_nothing_observed_still_gives_useful_steps() -> None:
    """With no records at all, the fallback asks for a service and window and points at the trace."""
    message = build_fallback([], FallbackStage.KNOWLEDGE_UNVERIFIED, "r", run_id=RUN)
    assert message.observed_facts == []
    assert any("naming the service and the time window" in s for s in message.next_steps)
    assert any(RUN in s for s in message.next_steps)


def test_explicit_next_steps_replace_derived_ones_and_reason_is_capped() -> None:
    """Callers may pass their own next steps; the reason is cut to a bounded one-liner."""
    message = build_fallback(run_records(), FallbackStage.EVIDENCE_CHECK, "r" * 2000, ["do this"])
    assert message.next_steps == ["do this"]
    assert len(message.reason) <= 600


@pytest.mark.parametrize("cause", list(FailureCause))
def test_every_failure_cause_has_a_stage_and_a_fitting_next_step(cause: FailureCause) -> None:
    """FAILURE stages read 'the diagnosis could not be finished: <why>' and lead with the step that fits the cause."""
    message = failure_fallback([], cause, run_id=RUN)
    assert message.stage == f"the diagnosis could not be finished: {FAILURE_STAGE[cause]}"
    assert message.next_steps[0] == FAILURE_STEP[cause]
    assert "_" not in message.stage


def test_unknown_stop_reasons_read_as_an_internal_error() -> None:
    """A stop reason this version does not know is never shown raw."""
    assert failure_cause("some_new_reason") is FailureCause.INTERNAL_ERROR
    assert failure_cause("model_unavailable") is FailureCause.MODEL_UNAVAILABLE


def test_source_labels_are_short_and_human() -> None:
    """Labels name the tool, its subject and the result size."""
    labels = {r.tool_call_id: source_label(r) for r in run_records()}
    assert labels[L1] == 'query_logs order-service "HikariPool" ERROR between 22:30 and 23:30 UTC on 2026-11-29 (37 matches)'
    assert labels[L0].endswith("(no matches)")
    assert labels[S1].endswith("(1 row)")
    assert labels[K1] == 'lookup_knowledge "HikariCP exhaustion" (1 section)'
    assert labels[E1] == 'query_mysql "DELETE FROM x" (could not run: SQL_REFUSED)'


def test_call_summaries_offer_only_referencable_calls_of_the_run() -> None:
    """Repair input lists READY FOUND/NO_EVIDENCE calls of this run, not ERROR calls or other runs."""
    records = [*run_records(), error_record(RUN, "e2", ToolName.QUERY_LOGS, "TIMEOUT", "slow"), *run_records("other")]
    summaries = call_summaries(records, RUN)
    assert [s.tool_call_id for s in summaries] == [L1, L0, S1, K1]
    assert summaries[0].summary == source_label(run_records()[0])


def test_window_text_handles_odd_values() -> None:
    """Windows spanning days keep dates; non-ISO values are shown shortened; none is 'the default window'."""
    assert window_text("2026-11-29T23:30:00Z", "2026-11-30T00:30:00Z") == "between 2026-11-29 23:30 and 2026-11-30 00:30 UTC"
    assert window_text("yesterday", None) == "between yesterday and ?"
    assert window_text(None, None) == "in the default window"


def test_a_call_repeated_with_the_same_answer_is_one_fact() -> None:
    """A weak model repeating the same failing call three times gives one 'could not run' fact, not three."""
    repeats = [error_record(RUN, f"r{i}", ToolName.QUERY_LOGS, "TIMEOUT", "slow", service="order-service",
                            query="timeout") for i in range(3)]
    facts = observed_facts([*repeats, run_records()[0]])
    assert len([f for f in facts if "could not run" in f.text]) == 1
    assert len(facts) == 2


def test_a_runbook_section_without_text_is_named_not_quoted() -> None:
    """A matched heading with an empty body never gives an empty quote; a later section with text is preferred."""
    empty_only = knowledge_record(RUN, "k_empty", "pool", [("db/hikari.md", "Pool exhaustion", "  ")])
    (fact,) = observed_facts([empty_only])
    assert fact.lines == []
    assert "it says" not in fact.text
    with_text = knowledge_record(RUN, "k_two", "pool", [("db/a.md", "Empty", ""), ("db/b.md", "Steps", "Raise the pool size.")])
    (fact,) = observed_facts([with_text])
    assert fact.lines == ["Raise the pool size."]
    assert "db/b.md" in fact.text
