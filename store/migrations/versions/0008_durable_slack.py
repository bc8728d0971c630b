"""Durable Slack: the intake (clicks recorded before the ack) and the outbox (Slack writes).

Revision ID: 0008_durable_slack
Revises: 0006_api
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_durable_slack"
down_revision = "0007_security"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "slack_intake",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("payload", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        _ts("received_at"),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("claim_owner", sa.String(200), nullable=True),
        _ts("claim_expires_at", nullable=True),
        _ts("done_at", nullable=True),
        sa.Column("result", sa.JSON(none_as_null=True), nullable=True),
    )
    op.create_index("ix_slack_intake_due", "slack_intake", ["status", "claim_expires_at"])
    op.create_index("ix_slack_intake_received", "slack_intake", ["received_at"])
    op.create_table(
        "slack_outbox",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("team_id", sa.String(64), nullable=True),
        sa.Column("channel", sa.String(64), nullable=True),
        sa.Column("thread_ts", sa.String(64), nullable=True),
        sa.Column("thread_key", sa.String(255), nullable=True),
        sa.Column("after_key", sa.String(255), nullable=True),
        sa.Column("user_id", sa.String(64), nullable=True),
        sa.Column("payload", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("sent_version", sa.Integer, nullable=False),
        sa.Column("ts", sa.String(64), nullable=True),
        sa.Column("progress", sa.Integer, nullable=False),
        sa.Column("unsure", sa.Boolean, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        _ts("next_attempt_at"),
        _ts("expires_at", nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("pending_since"),
        sa.Column("claim_token", sa.String(64), nullable=True),
        _ts("claim_expires_at", nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
    )
    op.create_index("ix_slack_outbox_due", "slack_outbox", ["state", "next_attempt_at"])
    op.create_index("ix_slack_outbox_pending", "slack_outbox", ["state", "pending_since"])
    op.create_table(
        "slack_senders",
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        _ts("expires_at"),
    )


def downgrade() -> None:
    op.drop_table("slack_senders")
    op.drop_index("ix_slack_outbox_pending", table_name="slack_outbox")
    op.drop_index("ix_slack_outbox_due", table_name="slack_outbox")
    op.drop_table("slack_outbox")
    op.drop_index("ix_slack_intake_received", table_name="slack_intake")
    op.drop_index("ix_slack_intake_due", table_name="slack_intake")
    op.drop_table("slack_intake")
