"""Plain words for the codes a run can end with: violation codes, tool error codes and failure causes.

One table per vocabulary, each with a test that every code it can meet has words (tests/unit/test_wording.py).
Codes stay in the timeline and the trace; users read the sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from core.contracts.release import FailureCause

# One sentence per EvidenceGuard violation code (SPEC §5; RULE_CODES in core/guard/rules.py).
VIOLATION_SENTENCES: Mapping[str, str] = MappingProxyType({
    "DRAFT_EMPTY": "The draft had no findings and no conclusion.",
    "ANALYSIS_EMPTY": "The draft had no findings to check.",
    "ANALYSIS_ID_MISSING": "A finding in the draft had no id, so nothing could refer to it.",
    "ANALYSIS_ID_DUPLICATE": "Two findings in the draft had the same id.",
    "ANALYSIS_KIND_MISSING": "A finding did not say whether it reports matches or the absence of matches.",
    "ANALYSIS_TEXT_MISSING": "A finding in the draft had no text.",
    "TOOL_REFERENCE_MISSING": "A finding cited no tool call at all.",
    "TEXT_MISSING": "A conclusion, action or recommendation in the draft had no text.",
    "ANALYSIS_REFERENCE_MISSING": "A conclusion, action or recommendation did not say which finding it rests on.",
    "ANALYSIS_REFERENCE_UNKNOWN": "A conclusion, action or recommendation rested on a finding the draft does not have.",
    "LIMITATIONS_SCOPE_MISSING": "The draft did not say what it examined.",
    "INVOCATION_MISSING": "The draft cited a tool call that never happened in this run.",
    "INVOCATION_ID_MISMATCH": "The draft cited a tool call whose record does not match its id.",
    "INVOCATION_NOT_REFERENCABLE": "The draft cited a tool call that could not run, so it is not evidence.",
    "EVIDENCE_KIND_MISMATCH": (
        "A finding reported matches from a query that found nothing (or the reverse)."
    ),
    "PROJECTION_INVALID": "The stored result of a cited tool call could not be read back.",
    "PROJECTION_MISMATCH": "The result the model saw for a cited call differs from the stored record.",
    "PROJECTION_EMPTY_FOUND": "A cited call was marked as having evidence but showed no items.",
    "PROJECTION_NONEMPTY_NO_EVIDENCE": "A cited call was marked as finding nothing but showed items.",
    "NUMBER_NOT_IN_EVIDENCE": "The draft stated a number that none of its cited tool results show.",
    "TOOL_TEXT_AS_INSTRUCTION": "The draft repeated tool output that addressed the assistant; tool output is only data.",
    "CANONICAL_UNAVAILABLE": "The store of this run's tool results could not be read, so no citation could be checked.",
    "NO_SNAPSHOT": "The evidence check produced no verified evidence to review.",
})
UNKNOWN_VIOLATION = "The draft failed a check of its citations."

# Tool error codes (ToolError.code) in a few words, for "could not run: …".
TOOL_ERROR_WORDS: Mapping[str, str] = MappingProxyType({
    "INVALID_ARGUMENTS": "its arguments were invalid",
    "UNKNOWN_TOOL": "no such tool",
    "TOOL_UNAVAILABLE": "that tool is not configured here",
    "BUDGET_EXHAUSTED": "the run's budget was used up",
    "CANCELLED": "the run was cancelled",
    "TIMEOUT": "the backend did not answer in time",
    "BACKEND_ERROR": "the backend failed",
    "BACKEND_UNAVAILABLE": "the backend could not be reached",
    "STORE_UNAVAILABLE": "the evidence store was unavailable",
    "RESULT_TOO_LARGE": "its result was too large to keep as evidence",
    "SQL_REFUSED": "the read-only SQL check refused it",
    "SQL_SYNTAX": "the SQL did not parse",
    "SQL_UNSUPPORTED": "that SQL is not supported",
    "SQL_TIMEOUT": "the database did not answer in time",
    "SQL_ERROR": "the database returned an error",
    "SQL_TOO_LARGE": "the query builds values or results over the size limits",
    "SQL_PRIVILEGED": "the SQL account has more than read-only rights",
    "LOGS_PATH_MISSING": "the log folder is missing",
    "KNOWLEDGE_PATH_MISSING": "the runbook folder is missing",
    "KNOWLEDGE_UNREADABLE": "the runbooks could not be read",
    "LOKI_BAD_QUERY": "Loki rejected the query",
    "LOKI_BAD_RESPONSE": "Loki answered with something unreadable",
    "LOKI_UNAUTHORIZED": "Loki refused the bot's credentials",
    "ES_BAD_QUERY": "Elasticsearch rejected the query",
    "ES_BAD_RESPONSE": "Elasticsearch answered with something unreadable",
    "ES_UNAUTHORIZED": "Elasticsearch refused the bot's credentials",
    "ES_INDEX_MISSING": "the Elasticsearch index does not exist",
    "METRICS_PATH_MISSING": "the metrics folder is missing",
    "METRICS_PATH_TOO_LARGE": "the metrics folder is too large to read without Prometheus",
    "METRICS_NEEDS_PROMETHEUS": "that PromQL needs Prometheus, and only the embedded metrics are configured",
    "METRICS_BAD_QUERY": "the PromQL query was not valid",
    "METRICS_MATCHES_EVERYTHING": "the metrics query would match every series",
    "METRICS_QUERY_TOO_COMPLEX": "the metrics query was too complex",
    "METRICS_RANGE_TOO_LONG": "the metrics query reached too far back",
    "METRICS_TOO_MANY_POINTS": "the metrics query asked for too many points per series",
    "METRICS_TOO_MANY_SERIES": "the metrics query returned too many series",
    "METRICS_TOO_MANY_SAMPLES": "Prometheus refused to load that many samples",
    "METRICS_RESPONSE_TOO_LARGE": "Prometheus' answer was too large to read",
    "METRICS_QUERY_FAILED": "Prometheus could not evaluate the query",
    "METRICS_TIMEOUT": "Prometheus did not answer in time",
    "METRICS_UNREACHABLE": "Prometheus could not be reached",
    "METRICS_UNAUTHORIZED": "Prometheus refused the bot's credentials",
    "METRICS_UNAVAILABLE": "Prometheus was unavailable",
    "METRICS_BAD_RESPONSE": "Prometheus answered with something unreadable",
    # MCP toolsets (core/tools/mcp): the server's own message follows in the call's error
    "MCP_TOOL_ERROR": "the MCP tool reported an error",
    "MCP_ERROR": "the MCP server refused the call",
    "SERVER_UNAVAILABLE": "the MCP server was unavailable (it did not start, crashed or broke the protocol)",
})

# Why a run ended without a draft: the stage in words and the next step that fits it.
FAILURE_STAGE: Mapping[FailureCause, str] = MappingProxyType({
    FailureCause.BUDGET_STEPS: "the step budget ran out before a report was written",
    FailureCause.BUDGET_TOOL_CALLS: "the tool-call budget ran out before a report was written",
    FailureCause.BUDGET_OBSERVATION: "the budget for tool results ran out before a report was written",
    FailureCause.DEADLINE: "the run's time limit passed before a report was written",
    FailureCause.CANCELLED: "the run was cancelled",
    FailureCause.MODEL_UNAVAILABLE: "the language model could not be reached or kept failing",
    FailureCause.WIRE_FORMAT: "the language model did not answer in the required format, even after a correction",
    FailureCause.NO_DRAFT: "the model ended without writing a report",
    FailureCause.INTERNAL_ERROR: "an internal error stopped the run",
    FailureCause.STORAGE: "the bot could not start or record this run",
    FailureCause.WORKER_STOPPED: "the bot process running it stopped (a crash or a restart) and nobody took it over",
})
FAILURE_STEP: Mapping[FailureCause, str] = MappingProxyType({
    FailureCause.BUDGET_STEPS: "Ask a narrower question (one service, one time window) so fewer steps are needed.",
    FailureCause.BUDGET_TOOL_CALLS: "Ask a narrower question (one service, one time window) so fewer queries are needed.",
    FailureCause.BUDGET_OBSERVATION: "Ask about a shorter time window or one service, so the results are smaller.",
    FailureCause.DEADLINE: "Ask again with a narrower question; if it keeps timing out, check the tool backends' latency.",
    FailureCause.CANCELLED: "Ask again when you want the diagnosis to run.",
    FailureCause.MODEL_UNAVAILABLE: (
        "Check that the model endpoint the bot uses is reachable and its key is valid (the bot's logs name the error), "
        "then ask again."
    ),
    FailureCause.WIRE_FORMAT: "Ask again; if it repeats, the configured model may not support function calling.",
    FailureCause.NO_DRAFT: "Ask again naming the service and the time window.",
    FailureCause.INTERNAL_ERROR: "Ask again in a moment; an operator can find the error in the bot's logs.",
    FailureCause.STORAGE: "Ask again in a minute; if it persists, check the bot's Redis and database.",
    FailureCause.WORKER_STOPPED: "Ask again; the bot's logs say why the process stopped.",
})
REVIEW_UNAVAILABLE_STEP = (
    "Check that the review model's endpoint is reachable (the bot's logs name the error), then ask again."
)
EVIDENCE_STEP = "Ask again; the next run makes its own tool calls and its report is checked the same way."


def violation_sentence(code: str) -> str:
    """The sentence for one violation code (a generic one for codes this table does not know)."""
    return VIOLATION_SENTENCES.get(code, UNKNOWN_VIOLATION)


def violation_sentences(codes: list[str], limit: int = 3) -> str:
    """Up to `limit` distinct sentences for a draft's violation codes, joined; '' for none."""
    sentences = list(dict.fromkeys(violation_sentence(c) for c in codes))
    more = len(sentences) - limit
    text = " ".join(sentences[:limit])
    return text + (f" ({more} more problem{'s' if more != 1 else ''} in the trace.)" if more > 0 else "")


def tool_error_words(code: str | None) -> str:
    """'the read-only SQL check refused it' for SQL_REFUSED; unknown codes read as 'it failed'."""
    return TOOL_ERROR_WORDS.get(code or "", "it failed")


def failure_cause(value: str) -> FailureCause:
    """The FailureCause for a stop reason or cause value (unknown values are an internal error)."""
    try:
        return FailureCause(value.strip().lower())
    except ValueError:
        return FailureCause.INTERNAL_ERROR
