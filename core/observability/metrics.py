"""Metrics: every Prometheus series diagbot exports, in one instance registry (no module-level registry state).

`core.bootstrap.build_services` builds one `Metrics` and passes it to the components it wires; each instrumented
place calls one method here. Label values that come from outside (tool names a model chose, Slack methods and
error codes) are folded into a bounded vocabulary so a misbehaving peer cannot explode the series count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from core.tools.registry import REGISTRY

CONTENT_TYPE = CONTENT_TYPE_LATEST
OTHER = "other"
NONE = "none"

_ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
_RUN_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 90.0, 120.0, 180.0, 300.0)
_MODEL_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
_TOOL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_CODE = re.compile(r"[A-Za-z0-9_]{1,64}")
_SLACK_METHOD = re.compile(r"[a-z][A-Za-z]{0,30}(?:\.[A-Za-z]{1,40}){1,3}")


def bounded(value: str | None, pattern: re.Pattern[str] = _CODE) -> str:
    """A label value: `none` for missing, the value when it matches `pattern`, else `other`."""
    if not value:
        return NONE
    return value if pattern.fullmatch(value) else OTHER


def slack_method(value: str | None) -> str:
    """A Slack Web API method name (chat.postMessage) as a bounded label value."""
    return bounded(value, _SLACK_METHOD)


class Metrics:
    """The process's Prometheus metrics; `render()` gives the text exposition for GET /metrics."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._tools = frozenset(spec.name for spec in REGISTRY.specs() if spec.args_model is not None)
        """The tool names that get series of their own (the native tools, then what the boundary configures)."""
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        """Each labelled child once looked up (prometheus_client's labels() validates and locks on every call; a
        child lives as long as its metric, which this class never removes)."""
        r = self.registry
        self._runs = Counter("diagbot_runs", "Finished runs by intent, outcome and fallback type.",
                             ["intent", "outcome", "fallback_type"], registry=r)
        self._run_seconds = Histogram("diagbot_run_duration_seconds", "Wall time of a run, routing to release decision.",
                                      ["intent"], buckets=_RUN_BUCKETS, registry=r)
        self._in_flight = Gauge("diagbot_runs_in_flight", "Runs being processed by this process now.", registry=r)
        self._violations = Counter("diagbot_guard_violations", "EvidenceGuard violations by rule code and check.",
                                   ["code", "check"], registry=r)
        self._guard_checks = Counter("diagbot_guard_checks", "EvidenceGuard checks by check and result.",
                                     ["check", "valid"], registry=r)
        self._repairs = Counter("diagbot_evidence_repairs", "Evidence repair attempts by result.", ["result"], registry=r)
        self._verdicts = Counter("diagbot_semantic_verdicts", "SemanticGuard verdicts.", ["verdict"], registry=r)
        self._tool_calls = Counter("diagbot_tool_calls", "Tool calls through the ToolBoundary by tool and evidence status.",
                                   ["tool", "evidence_status"], registry=r)
        self._tool_seconds = Histogram("diagbot_tool_call_duration_seconds", "Tool call latency inside the ToolBoundary.",
                                       ["tool"], buckets=_TOOL_BUCKETS, registry=r)
        self._model_seconds = Histogram("diagbot_model_call_duration_seconds", "Model call latency by pipeline stage.",
                                        ["stage", "result"], buckets=_MODEL_BUCKETS, registry=r)
        self._ack_seconds = Histogram("diagbot_slack_ack_duration_seconds", "Time from a Slack request to its ack.",
                                      ["mode"], buckets=_ACK_BUCKETS, registry=r)
        self._slack_errors = Counter("diagbot_slack_api_errors", "Slack Web API calls that failed, by method and error.",
                                     ["method", "error"], registry=r)
        self._slack_retries = Counter("diagbot_slack_api_retries", "Slack Web API retries by method and reason.",
                                      ["method", "reason"], registry=r)
        self._purged = Counter("diagbot_retention_purged_rows", "Rows deleted by the retention job, by table.",
                               ["table"], registry=r)
        self._purge_failures = Counter("diagbot_retention_failures", "Retention purges that failed (retried later).",
                                       registry=r)
        self._feedback = Counter("diagbot_feedback_votes", "👍/👎 votes stored on final messages (a first vote or a "
                                 "change; the same vote clicked again is not counted).", ["vote"], registry=r)
        self._queue_depth = Gauge("diagbot_queue_depth", "Turns waiting in the job queue.", registry=r)
        self._queue_oldest = Gauge("diagbot_queue_oldest_job_age_seconds", "Age of the oldest waiting turn.", registry=r)
        self._queue_jobs = Counter("diagbot_queue_jobs", "Turn jobs by event: queued, duplicate, full, direct (queue "
                                   "down), reclaimed, handed_back, gave_up, finished, poison (an entry that was "
                                   "not a turn job: answered in its thread when it names one, dead-lettered).",
                                   ["event"], registry=r)
        self._alerts = Counter("diagbot_alerts", "Alert notifications by source (alertmanager, slack_app) and event: "
                               "received, investigated, deduplicated, over_limit (the channel's hourly storm limit), "
                               "refused (bad token, body or version; no channel).", ["source", "event"], registry=r)

    def _of(self, metric: Any, *values: str) -> Any:
        """metric.labels(*values), remembered (the label values are bounded: the map stays small)."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    # ---- runs ----------------------------------------------------------------------------------

    @contextmanager
    def run_in_flight(self) -> Iterator[None]:
        """Count a run as in flight for the duration of the block."""
        self._in_flight.inc()
        try:
            yield
        finally:
            self._in_flight.dec()

    def run_finished(self, intent: str | None, outcome: str | None, fallback_type: str | None, seconds: float) -> None:
        """One finished run under its intent, outcome and fallback type (`none` when it has none)."""
        intent_label = bounded(intent)
        self._of(self._runs, intent_label, bounded(outcome), bounded(fallback_type)).inc()
        self._of(self._run_seconds, intent_label).observe(max(0.0, seconds))

    # ---- release pipeline ----------------------------------------------------------------------

    def guard_checked(self, check: str, violation_codes: Iterable[str]) -> None:
        """One EvidenceGuard check (`initial` or `recheck`) and each of its violations by code."""
        codes = list(violation_codes)
        check_label = bounded(check)
        self._of(self._guard_checks, check_label, "false" if codes else "true").inc()
        for code in codes:
            self._of(self._violations, bounded(code), check_label).inc()

    def repair_attempted(self, result: str) -> None:
        """One evidence repair attempt: `repaired`, `no_repair` or `error`."""
        self._of(self._repairs, bounded(result)).inc()

    def semantic_verdict(self, verdict: str) -> None:
        """One SemanticGuard verdict (SUPPORTED, UNSUPPORTED, UNAVAILABLE)."""
        self._of(self._verdicts, bounded(verdict)).inc()

    # ---- tools and models ----------------------------------------------------------------------

    def count_tools(self, names: Iterable[str]) -> None:
        """Add the configured tools' names to the tool set (the boundary does, so MCP tools get series too)."""
        self._tools = self._tools | frozenset(names)

    def tool_call(self, tool: str, evidence_status: str, seconds: float) -> None:
        """One tool call through the boundary; names outside the tool set count as `other`."""
        tool_label = tool if tool in self._tools else OTHER
        self._of(self._tool_calls, tool_label, bounded(evidence_status)).inc()
        self._of(self._tool_seconds, tool_label).observe(max(0.0, seconds))

    def model_call(self, stage: str, ok: bool, seconds: float) -> None:
        """One model call of a stage (agent, router, repair, semantic_guard, knowledge), answered or failed."""
        self._of(self._model_seconds, bounded(stage), "ok" if ok else "error").observe(max(0.0, seconds))

    # ---- Slack ---------------------------------------------------------------------------------

    def slack_ack(self, mode: str, seconds: float) -> None:
        """Time a Slack request (HTTP or Socket Mode envelope) took to be acknowledged."""
        self._of(self._ack_seconds, bounded(mode)).observe(max(0.0, seconds))

    def slack_api_error(self, method: str | None, error: str | None) -> None:
        """A Slack Web API call that failed (Slack's error code, an HTTP status or a network error type)."""
        self._of(self._slack_errors, slack_method(method), bounded(error)).inc()

    def slack_api_retry(self, method: str | None, reason: str) -> None:
        """The Slack client retries a call (rate limited, server error, connection error)."""
        self._of(self._slack_retries, slack_method(method), bounded(reason)).inc()

    # ---- retention -----------------------------------------------------------------------------

    def retention_purged(self, table: str, rows: int) -> None:
        """Rows one retention run deleted from a table."""
        self._of(self._purged, bounded(table)).inc(max(0, rows))

    def retention_failed(self) -> None:
        """A retention run failed (it is retried later)."""
        self._purge_failures.inc()

    def feedback(self, vote: str) -> None:
        """One vote on a run's final message (`up` or `down`)."""
        self._of(self._feedback, bounded(vote)).inc()

    # ---- job queue -----------------------------------------------------------------------------

    def queue_state(self, depth: int, oldest_age_s: float) -> None:
        """The job queue's depth and the age of its oldest waiting turn (0 when empty)."""
        self._queue_depth.set(max(0, depth))
        self._queue_oldest.set(max(0.0, oldest_age_s))

    def alert(self, source: str, event: str) -> None:
        """One alert event (see the counter's help)."""
        self._of(self._alerts, bounded(source), bounded(event)).inc()

    def queue_job(self, event: str) -> None:
        """One job event (see the counter's help)."""
        self._of(self._queue_jobs, bounded(event)).inc()

    # ---- exposition ----------------------------------------------------------------------------

    def render(self) -> bytes:
        """The Prometheus text exposition of every series (content type: `CONTENT_TYPE`)."""
        return generate_latest(self.registry)

