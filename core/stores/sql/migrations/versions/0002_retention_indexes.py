"""Indexes on the time column of every table the retention job purges, so each batch is an index range scan.

Revision ID: 0002_retention_indexes
Revises: 0001_initial
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0002_retention_indexes"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

INDEXES = (
    ("ix_runs_started", "runs", "started_at"),
    ("ix_tool_invocations_started", "tool_invocations", "started_at"),
    ("ix_timeline_events_at", "timeline_events", "at"),
    ("ix_reasoning_audit_recorded", "reasoning_audit", "recorded_at"),
)


def upgrade() -> None:
    """Add one index per purged table on its time column."""
    for name, table, column in INDEXES:
        op.create_index(name, table, [column])


def downgrade() -> None:
    """Drop the retention indexes."""
    for name, table, _ in INDEXES:
        op.drop_index(name, table_name=table)
