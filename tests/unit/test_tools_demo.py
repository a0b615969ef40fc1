"""The bundled demo incident through the registry's tools: the signal is findable, absent terms are absent."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.settings import DEMO_DATA, Settings
from core.tools.clock import clock_from
from core.tools.knowledge.args import KnowledgeArgs
from core.tools.knowledge.tool import KnowledgeTool
from core.tools.logs.args import LogsArgs
from core.tools.logs.jsonl import LogsTool
from core.tools.sql.args import SqlArgs
from core.tools.sql.tool import SqlTool
from demo.generate import DEMO_CLOCK, NOTIFICATION_ABSENT_TERM
from testkit.tool_names import ToolName
from testkit.tools import backends_for

CLOCK = datetime.fromisoformat(DEMO_CLOCK)


def _settings(**overrides: object) -> Settings:
    return Settings.model_validate({"diag_clock": CLOCK, **overrides})


async def test_registry_builds_the_three_tools_with_the_pinned_clock() -> None:
    """build_tools returns one tool per ToolName with matching names; DIAG_CLOCK drives the clock."""
    tools = await backends_for(_settings())
    assert set(ToolName) <= set(tools)  # and query_metrics, over its own demo folder
    assert all(tool.name == name for name, tool in tools.items())
    assert isinstance(tools[ToolName.QUERY_LOGS], LogsTool)
    assert isinstance(tools[ToolName.LOOKUP_KNOWLEDGE], KnowledgeTool)
    assert isinstance(tools[ToolName.QUERY_MYSQL], SqlTool)
    assert clock_from(_settings())() == CLOCK


def test_real_clock_is_used_without_diag_clock_over_other_logs(tmp_path: Path) -> None:
    """Without DIAG_CLOCK, over logs that are not the bundled demo data, the clock is the real UTC time."""
    before = datetime.now(UTC)
    now = clock_from(Settings(diag_logs_path=tmp_path))()
    assert before <= now <= datetime.now(UTC)
    naive = clock_from(Settings(diag_clock=datetime(2026, 1, 1, 12, 0)))()
    assert naive.tzinfo is not None


async def test_unset_clock_over_the_demo_data_is_the_demo_clock_said_once(caplog: pytest.LogCaptureFixture) -> None:
    """Over the bundled demo logs an unset DIAG_CLOCK means the demo's clock, and building the tools says so once."""
    assert clock_from(Settings())() == CLOCK
    with caplog.at_level(logging.WARNING):
        await backends_for(Settings())
    notes = [r.getMessage() for r in caplog.records if "DIAG_CLOCK" in r.getMessage()]
    assert len(notes) == 1
    assert "2026-11-29T23:30:00+00:00" in notes[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        await backends_for(_settings())  # an explicit DIAG_CLOCK: nothing to say
    assert not [r for r in caplog.records if "DIAG_CLOCK" in r.getMessage()]


async def test_tools_over_the_demo_data_find_the_incident_without_diag_clock() -> None:
    """`diagbot tool query_logs` over the bundled data finds the incident with no DIAG_CLOCK (the default window)."""
    logs = (await backends_for(Settings()))[ToolName.QUERY_LOGS]
    result = await logs.run(LogsArgs(service="order-service", query="HikariPool", level="ERROR"))
    assert result.total_count > 100


async def test_order_service_pool_exhaustion_is_findable_in_the_default_window() -> None:
    """The default window before the demo clock holds the HikariCP timeout errors, starting at about 23:00Z."""
    logs = (await backends_for(_settings()))[ToolName.QUERY_LOGS]
    result = await logs.run(LogsArgs(service="order-service", query='"Connection is not available"', level="ERROR"))
    assert result.total_count > 100
    assert result.items[0]["timestamp"].startswith("2026-11-29T23:00")
    assert "request timed out after 30000ms" in result.items[0]["message"]
    stats = await logs.run(LogsArgs(service="order-service", query="active=20 idle=0 waiting=57"))
    assert stats.total_count > 0


async def test_malformed_demo_lines_are_counted() -> None:
    """The truncated order-service line is skipped and counted."""
    logs = (await backends_for(_settings()))[ToolName.QUERY_LOGS]
    result = await logs.run(LogsArgs(service="order-service", query="HikariPool"))
    assert result.notes["invalid_lines_skipped"] >= 1


async def test_notification_service_has_no_timeout_lines() -> None:
    """An exact query for 'timeout' on notification-service matches nothing (NO_EVIDENCE material)."""
    logs = (await backends_for(_settings()))[ToolName.QUERY_LOGS]
    result = await logs.run(LogsArgs(service="notification-service", query=NOTIFICATION_ABSENT_TERM))
    assert result.total_count == 0
    assert result.items == []
    healthy = await logs.run(LogsArgs(service="notification-service", query="email sent"))
    assert healthy.total_count > 0


async def test_upstream_symptoms_and_the_deploy_are_visible() -> None:
    """payment-service timeouts, checkout-api 502s and the 4.18.0 rollout are in the logs."""
    logs = (await backends_for(_settings()))[ToolName.QUERY_LOGS]
    payment = await logs.run(LogsArgs(service="payment-service", query="upstream timeout order-service"))
    checkout = await logs.run(LogsArgs(service="checkout-api", query="502 order-service", level="ERROR"))
    deploy = await logs.run(LogsArgs(service="order-service", query="4.18.0 rolling"))
    assert payment.total_count > 0
    assert checkout.total_count > 0
    assert deploy.total_count == 1
    inventory = await logs.run(LogsArgs(service="inventory-service", query="error", level="ERROR"))
    assert inventory.total_count == 0


async def test_demo_sql_has_the_deploy_pool_stats_and_flag() -> None:
    """shop.db holds the 22:55 deploy, an exhausted pool minute and the flag the deploy enabled."""
    sql = (await backends_for(_settings()))[ToolName.QUERY_MYSQL]
    pool = await sql.run(SqlArgs(sql=(
        "SELECT active, idle, waiting FROM db_connection_pool_stats WHERE service = 'order-service' "
        "AND ts = '2026-11-29 23:05:00'")))
    assert pool.rows == [[20, 0, 57]]
    flag = await sql.run(SqlArgs(sql="SELECT enabled, updated_by FROM feature_flags WHERE name = 'order_reconciliation_v2'"))
    assert flag.rows == [[1, "deploy order-service 4.18.0"]]
    tables = await sql.run(SqlArgs(sql="SHOW TABLES"))
    assert {"orders", "payments", "deployments", "alerts", "incidents", "db_connection_pool_stats", "feature_flags"} <= {
        row[0] for row in tables.rows
    }


def test_demo_knowledge_has_at_least_six_runbooks() -> None:
    """The knowledge folder has six or more Markdown runbooks."""
    assert len(list(Path(DEMO_DATA / "knowledge").rglob("*.md"))) >= 6


async def test_demo_rollback_question_finds_the_rollback_runbook() -> None:
    """A rollback question ranks the deploy rollback runbook first."""
    knowledge = (await backends_for(_settings()))[ToolName.LOOKUP_KNOWLEDGE]
    result = await knowledge.run(KnowledgeArgs(query="deploy rollback steps", top_k=2))
    assert result.items[0]["doc"] == "runbooks/deploy-rollback.md"
