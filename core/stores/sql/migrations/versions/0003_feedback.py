"""The feedback table: one 👍/👎 per user and run (the latest vote wins), read by /diag trace and `diagbot feedback`.

Revision ID: 0003_feedback
Revises: 0002_retention_indexes
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003_feedback"
down_revision = "0002_retention_indexes"
branch_labels = None
depends_on = None

# Frozen copy of the column type of this revision (migrations never import the live models).
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    """Create the feedback table and its time index (the export reads by time)."""
    op.create_table(
        "feedback",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("user", sa.String(64), primary_key=True),
        sa.Column("team", sa.String(64), nullable=False),
        sa.Column("vote", sa.String(8), nullable=False),
        sa.Column("at", Timestamp, nullable=False),
    )
    op.create_index("ix_feedback_at", "feedback", ["at"])


def downgrade() -> None:
    """Drop the feedback table."""
    op.drop_index("ix_feedback_at", table_name="feedback")
    op.drop_table("feedback")
