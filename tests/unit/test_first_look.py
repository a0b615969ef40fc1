"""The first look's deterministic parts: which services and window a question names, which phrase stands for the
most frequent message, which tables record changes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.steps.first_look import services_in, window_in
from core.tools.logs.first_look import most_frequent_phrase
from core.tools.sql.first_look import change_tables

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


@pytest.mark.parametrize(("question", "services"), [
    ("why is order-service failing since 23:00?", ("order-service",)),
    ("checkout-api 500s, and payment-service timeouts?", ("checkout-api", "payment-service")),
    ("alert HighErrorRate service=billing firing", ("billing",)),
    ("is the follow-up on the read-only replica done?", ()),
    ("a, b-api, c-service, d-worker", ("b-api", "c-service")),
])
def test_services_named_in_a_question(question: str, services: tuple[str, ...]) -> None:
    """Labels first, then service-like hyphenated names; at most two; ordinary hyphenated words are not services."""
    assert services_in(question) == services


@pytest.mark.parametrize(("question", "start"), [
    ("why is order-service failing since 23:00?", datetime(2026, 11, 29, 23, 0, tzinfo=UTC)),
    ("errors since about 8", datetime(2026, 11, 29, 8, 0, tzinfo=UTC)),
    ("payment-service alerted around 21:05", datetime(2026, 11, 29, 20, 50, tzinfo=UTC)),
    ("checkout errors since noon", datetime(2026, 11, 29, 12, 0, tzinfo=UTC)),
    ("since 11pm", datetime(2026, 11, 29, 23, 0, tzinfo=UTC)),
    ("since 23:45", datetime(2026, 11, 28, 23, 45, tzinfo=UTC)),
    ("order-service at 5 replicas", None),
    ("why is it failing?", None),
])
def test_window_named_in_a_question(question: str, start: datetime | None) -> None:
    """'since' a time starts the window there (yesterday when that time is still to come); 'around' 15 minutes
    earlier; a bare number after 'at' is not a time."""
    assert window_in(question, NOW) == start


def test_the_most_frequent_message_gives_a_phrase_without_its_numbers() -> None:
    """The phrase is the longest stretch without digits of the most common message shape, so it matches every
    occurrence whatever its numbers."""
    lines = [{"message": f"HikariPool-1 - Connection is not available, request timed out after 30000ms (waiting={n})"}
             for n in (3, 7, 9)] + [{"message": "Slow query took 812ms"}]
    assert most_frequent_phrase({"logs": lines}) == "Connection is not available, request timed out after"
    assert most_frequent_phrase({"logs": [{"message": "ok 1"}]}) is None
    assert most_frequent_phrase(None) is None


def test_change_tables_are_found_by_name_and_only_plain_names_are_used() -> None:
    """deployments, changes, release_log... are change tables; odd names are never put into SQL."""
    rows = [["alerts"], ["deployments"], ["orders"], ["feature_changes"], ["x; DROP TABLE y"], ["releases"]]
    assert change_tables({"rows": rows}) == ["deployments", "feature_changes"]
    assert change_tables({"rows": []}) == []
