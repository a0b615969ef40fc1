"""Tool argument models: validation errors, defaults and the resolved log window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from core.tools.knowledge.args import KnowledgeArgs
from core.tools.logs.args import LogsArgs
from core.tools.registry import REGISTRY
from core.tools.sql.args import SqlArgs
from testkit.tool_names import ToolName

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


def test_knowledge_args_defaults_top_k_to_5() -> None:
    """top_k is optional and defaults to 5."""
    assert KnowledgeArgs(query="hikari").top_k == 5


@pytest.mark.parametrize("bad", [{"query": ""}, {"query": "   "}, {"query": "x", "top_k": 0}, {"query": "x", "top_k": 11},
                                 {}, {"query": "x", "extra": 1}])
def test_knowledge_args_reject_invalid_input(bad: dict[str, object]) -> None:
    """Empty or blank query, top_k outside 1..10, missing query and unknown fields are rejected."""
    with pytest.raises(ValidationError):
        KnowledgeArgs.model_validate(bad)


def test_logs_args_default_window_is_the_60_minutes_before_the_clock() -> None:
    """Without start/end the window is [clock - 60 min, clock]."""
    args = LogsArgs(service="order-service", query="timeout")
    assert args.window(NOW) == (NOW - timedelta(minutes=60), NOW)
    assert args.limit == 20
    assert args.level is None


def test_logs_args_missing_start_is_60_minutes_before_given_end() -> None:
    """Only end given: start is 60 minutes before it."""
    end = datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
    args = LogsArgs(service="s", query="q", end=end)
    assert args.window(NOW) == (end - timedelta(minutes=60), end)


def test_logs_args_missing_end_is_the_clock() -> None:
    """Only start given: end is the clock."""
    start = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
    assert LogsArgs(service="s", query="q", start=start).window(NOW) == (start, NOW)


def test_logs_args_naive_times_are_utc_and_levels_are_normalised() -> None:
    """A timestamp without offset is read as UTC; 'warning' becomes WARN."""
    args = LogsArgs.model_validate({"service": "s", "query": "q", "start": "2026-11-29T22:00:00", "level": "warning"})
    assert args.start == datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
    assert args.level == "WARN"


@pytest.mark.parametrize(
    "bad",
    [
        {"query": "q"},
        {"service": "s"},
        {"service": "", "query": "q"},
        {"service": "s", "query": "q", "level": "LOUD"},
        {"service": "s", "query": "q", "limit": 0},
        {"service": "s", "query": "q", "limit": 51},
        {"service": "s", "query": "q", "start": "yesterday"},
        {"service": "s", "query": "q", "start": "2026-11-29T23:00:00Z", "end": "2026-11-29T22:00:00Z"},
        {"service": "s", "query": "q", "start": "2026-11-29T23:00:00Z", "end": "2026-11-29T23:00:00Z"},
        {"service": "s", "query": "q", "grep": "x"},
    ],
)
def test_logs_args_reject_invalid_input(bad: dict[str, object]) -> None:
    """Missing fields, unknown level, limit outside 1..50, non-ISO times, start >= end and extras are rejected."""
    with pytest.raises(ValidationError):
        LogsArgs.model_validate(bad)


def test_sql_args_require_non_blank_sql() -> None:
    """sql is required and may not be blank."""
    with pytest.raises(ValidationError):
        SqlArgs.model_validate({"sql": "  "})
    assert SqlArgs(sql=" SELECT 1 ").sql == "SELECT 1"


def test_every_tool_has_an_args_model_with_documented_fields() -> None:
    """Each tool maps to its model, and every schema property carries a description for the model."""
    models = {spec.name: spec.args_model for spec in REGISTRY.specs() if spec.args_model is not None}
    assert set(ToolName) <= set(models)
    for name, model in models.items():
        schema = model.model_json_schema()
        assert schema["additionalProperties"] is False
        for prop in schema["properties"].values():
            assert prop.get("description"), f"{name}: undocumented field"
