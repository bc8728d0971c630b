"""Approval policies: a request's quorum and the approvals counted towards it, and whether
approving needs a reason.

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "approval_requests",
        sa.Column("min_approvals", sa.Integer, nullable=False, server_default="1"),
    )
    op.add_column(
        "approval_requests",
        sa.Column("require_reason", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.add_column("approval_requests", sa.Column("rule", sa.String(200)))
    op.add_column("approval_requests", sa.Column("escalate_at", sa.DateTime(timezone=True)))
    op.add_column("approval_requests", sa.Column("escalate_to", sa.JSON(none_as_null=True)))
    op.add_column("approval_requests", sa.Column("escalated_at", sa.DateTime(timezone=True)))
    op.add_column("approval_requests", sa.Column("standing_seconds", sa.Integer))
    op.create_index("ix_requests_status_escalate", "approval_requests", ["status", "escalate_at"])
    op.create_table(
        "standing_grants",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("agent_id", sa.String(200), nullable=False),
        sa.Column("tool_name", sa.String(200), nullable=False),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("thread_ts", sa.String(64), nullable=False),
        sa.Column("granted_by", sa.String(64), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", sa.String(64)),
        sa.Column("message_ts", sa.String(64)),
        sa.Column("revoked_by", sa.String(64)),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
    )
    op.create_index(
        "ix_standing_grants_thread", "standing_grants", ["channel_id", "thread_ts", "tool_name"]
    )
    op.create_table(
        "request_approvals",
        sa.Column(
            "request_id",
            sa.String(64),
            sa.ForeignKey("approval_requests.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("approver", sa.String(64), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("args_hash", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("standing_grants")
    op.drop_table("request_approvals")
    op.drop_index("ix_requests_status_escalate", table_name="approval_requests")
    for column in ("standing_seconds", "escalated_at", "escalate_to", "escalate_at", "rule"):
        op.drop_column("approval_requests", column)
    op.drop_column("approval_requests", "require_reason")
    op.drop_column("approval_requests", "min_approvals")
