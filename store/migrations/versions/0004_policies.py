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
    op.create_index("ix_requests_status_escalate", "approval_requests", ["status", "escalate_at"])
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
    op.drop_table("request_approvals")
    op.drop_index("ix_requests_status_escalate", table_name="approval_requests")
    for column in ("escalated_at", "escalate_to", "escalate_at", "rule"):
        op.drop_column("approval_requests", column)
    op.drop_column("approval_requests", "require_reason")
    op.drop_column("approval_requests", "min_approvals")
