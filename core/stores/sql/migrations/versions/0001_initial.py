"""The schema as it was before migrations (runs, tool_invocations, timeline_events, reasoning_audit).

A database created by the old `create_all` has exactly these tables and is stamped at this revision.

Revision ID: 0001_initial
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies of the column types of this revision (migrations never import the live models).
LongText = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    """Create the four tables of the first release."""
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("session_key", sa.String(255), nullable=False),
        sa.Column("team", sa.String(64), nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("user", sa.String(64), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("intent", sa.String(16)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(32)),
        sa.Column("fallback_type", sa.String(64)),
        sa.Column("prompt_hashes", sa.Text(), nullable=False),
        sa.Column("rule_set_version", sa.String(64), nullable=False),
        sa.Column("models", sa.Text(), nullable=False),
        sa.Column("published_report", LongText),
        sa.Column("started_at", Timestamp, nullable=False),
        sa.Column("finished_at", Timestamp),
    )
    op.create_index("ix_runs_session_started", "runs", ["session_key", "started_at"])
    op.create_table(
        "tool_invocations",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(128), nullable=False),
        sa.Column("tool_name", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("evidence_status", sa.String(16)),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("raw_bytes", sa.BigInteger(), nullable=False),
        sa.Column("projection_bytes", sa.Integer(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("error_code", sa.String(64)),
        sa.Column("started_at", Timestamp, nullable=False),
        sa.UniqueConstraint("run_id", "tool_call_id", name="uq_tool_invocations_call"),
    )
    op.create_table(
        "timeline_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("at", Timestamp, nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.UniqueConstraint("run_id", "seq", name="uq_timeline_events_seq"),
    )
    op.create_table(
        "reasoning_audit",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("stage", sa.String(40), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("content", LongText, nullable=False),
        sa.Column("recorded_at", Timestamp, nullable=False),
    )
    op.create_index("ix_reasoning_audit_run", "reasoning_audit", ["run_id", "stage", "step"])


def downgrade() -> None:
    """Drop the four tables."""
    for table in ("reasoning_audit", "timeline_events", "tool_invocations", "runs"):
        op.drop_table(table)
