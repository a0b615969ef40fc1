"""tool_invocations.tool_name holds 80 characters: MCP tools are named mcp_<server>_<tool> (up to 64 by the model
APIs' function-name rule), past the 32 the native tool names needed.

Revision ID: 0006_tool_name_width
Revises: 0005_runs_status_index
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_tool_name_width"
down_revision = "0005_runs_status_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Widen the column (SQLite rebuilds the table in batch mode)."""
    with op.batch_alter_table("tool_invocations") as batch:
        batch.alter_column("tool_name", type_=sa.String(80), existing_type=sa.String(32), existing_nullable=False)


def downgrade() -> None:
    """Narrow it again (names over 32 characters would be cut by the database or refused)."""
    with op.batch_alter_table("tool_invocations") as batch:
        batch.alter_column("tool_name", type_=sa.String(32), existing_type=sa.String(80), existing_nullable=False)
