"""guard_drafts: every draft the EvidenceGuard checked, with what it read, for `diagbot replay` (internal).

Revision ID: 0004_guard_drafts
Revises: 0003_feedback
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0004_guard_drafts"
down_revision = "0003_feedback"
branch_labels = None
depends_on = None

# Frozen copies of the column types of this revision (migrations never import the live models).
LongText = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    """Create the table and its run and retention indexes."""
    op.create_table(
        "guard_drafts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("rule_set_version", sa.String(64), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.Column("codes", sa.Text(), nullable=False),
        sa.Column("content", LongText, nullable=False),
        sa.Column("recorded_at", Timestamp, nullable=False),
    )
    op.create_index("ix_guard_drafts_run", "guard_drafts", ["run_id", "id"])
    op.create_index("ix_guard_drafts_recorded", "guard_drafts", ["recorded_at"])


def downgrade() -> None:
    """Drop the table."""
    op.drop_index("ix_guard_drafts_recorded", table_name="guard_drafts")
    op.drop_index("ix_guard_drafts_run", table_name="guard_drafts")
    op.drop_table("guard_drafts")
