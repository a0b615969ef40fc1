"""runs: an index on (status, started_at) for the recovery job's look-up of runs left RUNNING.

Revision ID: 0005_runs_status_index
Revises: 0004_guard_drafts
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0005_runs_status_index"
down_revision = "0004_guard_drafts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the index."""
    op.create_index("ix_runs_status_started", "runs", ["status", "started_at"])


def downgrade() -> None:
    """Drop the index."""
    op.drop_index("ix_runs_status_started", table_name="runs")
