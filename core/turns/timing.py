"""Every deadline, TTL, grace and poll interval of a turn, derived from the run budgets in one place.

The chain, from the run outwards:

    run deadline (Budgets.deadline_s)
      + release grace                      = backstop_s     the core's hard end of a run
      + watchdog_grace_s                   = due_s          a turn not yet delivering is taken over
      + max(final_margin_s, grace + 1)     = answer_by_s    the final is in the thread, or its failure logged
    delivery_s (final_margin_s, ≥ grace+1) + one Slack attempt + margin = answer_claim_ttl_s
    claim_after_s (DIAG_QUEUE_CLAIM_AFTER_S) → heartbeat_s = claim_after_s / 4 → take/order/retry polls
    3 x claim_after_s (≥ 90 s)             = stale_run_age_s  recovery looks only after a take-over had its chance
"""

from __future__ import annotations

from dataclasses import dataclass

from core.contracts.run import Budgets
from core.run import release_grace_s
from core.settings import Settings

# One Slack call never waits longer than this (bot/slack_retry.py ATTEMPT_TIMEOUT_S keeps the same figure).
SLACK_ATTEMPT_S = 15.0
# The answer record outlives every redelivery of its job: Slack's retries (≤ ~5 min), a queued job waiting behind
# its thread, a job reclaimed after an outage. A day is far past all of them and still small in Redis.
ANSWER_RECORD_TTL_S = 24 * 3600.0


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


@dataclass(frozen=True)
class TurnTiming:
    """When a turn must be answered and how often its keepers look, counted from the start of its run."""

    run_deadline_s: float = Budgets().deadline_s
    """The run's own deadline (Budgets.deadline_s)."""
    watchdog_grace_s: float = 10.0
    """How long past the run's hard backstop (deadline + release grace) before the watchdog takes the turn over."""
    final_margin_s: float = 60.0
    """How long past the hard backstop the final message may keep trying to reach Slack (outages shorter than this
    still end in the answer)."""
    interval_s: float = 1.0
    """How often the watchdog looks."""
    claim_after_s: float = 30.0
    """A job not heartbeated for this long belongs to a dead worker and is taken over (DIAG_QUEUE_CLAIM_AFTER_S)."""
    shutdown_grace_s: float = 30.0
    """At SIGTERM, how long running turns may finish before the rest are handed back (DIAG_SHUTDOWN_GRACE_S)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> TurnTiming:
        """The production timing: the budgets' deadline, DIAG_QUEUE_CLAIM_AFTER_S and DIAG_SHUTDOWN_GRACE_S."""
        return cls(run_deadline_s=settings.budgets.deadline_s, claim_after_s=settings.diag_queue_claim_after_s,
                   shutdown_grace_s=settings.diag_shutdown_grace_s)

    @property
    def backstop_s(self) -> float:
        """The core's hard end of a run: its deadline plus the release grace."""
        return self.run_deadline_s + release_grace_s(self.run_deadline_s)

    @property
    def due_s(self) -> float:
        """Seconds after a run starts at which a turn not yet delivering is taken over."""
        return self.backstop_s + self.watchdog_grace_s

    @property
    def delivery_s(self) -> float:
        """How long past the backstop a final may keep retrying: beyond the watchdog's take-over, so its FAILURE too
        gets the retries."""
        return max(self.final_margin_s, self.watchdog_grace_s + 1.0)

    @property
    def answer_by_s(self) -> float:
        """Seconds after a run starts by which the final message is in the thread, or its failure logged."""
        return self.backstop_s + self.delivery_s

    @property
    def answer_claim_ttl_s(self) -> float:
        """A poster's claim on a turn's answer record: longer than any one delivery (which retries for at most
        delivery_s, each Slack call bounded), so a live poster keeps it; short enough that a poster killed mid-post
        frees the turn for its re-run well within the re-run's own deadline."""
        return self.delivery_s + SLACK_ATTEMPT_S + 15.0

    @property
    def answer_record_ttl_s(self) -> float:
        """How long `done:` and the placeholder record are kept (see ANSWER_RECORD_TTL_S)."""
        return ANSWER_RECORD_TTL_S

    @property
    def claim_wait_s(self) -> float:
        """How long a final waits for another poster's live claim on the same turn before leaving it the answer."""
        return 5.0

    @property
    def claim_poll_s(self) -> float:
        """How often a waiting final looks at the other poster's claim."""
        return 0.5

    @property
    def heartbeat_s(self) -> float:
        """How often a worker heartbeats its jobs and looks for dead workers' ones: four beats per claim_after_s,
        so one late beat never loses a live job."""
        return _clamp(self.claim_after_s / 4, 0.05, 5.0)

    @property
    def take_block_s(self) -> float:
        """How long one take from the queue blocks (bounds how fast a stopping worker stops taking)."""
        return min(1.0, self.heartbeat_s)

    @property
    def store_retry_s(self) -> float:
        """The pause before the take loop tries a store that failed again."""
        return min(1.0, self.heartbeat_s)

    @property
    def order_poll_s(self) -> float:
        """How often a job waiting for its thread's earlier turn (possibly in another process) looks again."""
        return _clamp(self.heartbeat_s / 10, 0.02, 0.1)

    @property
    def step_timeout_s(self) -> float:
        """The longest one step of a take-over (stopping the progress display, the core's abandon) may take."""
        return SLACK_ATTEMPT_S

    @property
    def shutdown_note_s(self) -> float:
        """How long a turn cancelled at shutdown may spend telling its thread."""
        return 5.0

    @property
    def stale_run_age_s(self) -> float:
        """Recovery looks at a RUNNING run without heartbeat only once it is this old: three claim_after_s, so the
        queue's take-over (whose re-run answers the thread) has had its chance first."""
        return max(90.0, 3 * self.claim_after_s)

    @property
    def recovery_interval_s(self) -> float:
        """How often recovery looks (two passes within one stale age)."""
        return self.stale_run_age_s * 2 / 3
