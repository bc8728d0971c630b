"""The approval API: keys, API requests (with their spec on the approval request), webhooks.

Revision ID: 0006_api
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_api"
down_revision = "0004"
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.add_column(
        "approval_requests", sa.Column("api_spec", sa.JSON(none_as_null=True), nullable=True)
    )
    op.create_table(
        "api_keys",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("webhook_secret", sa.Text, nullable=False),
        sa.Column("channels", sa.JSON(none_as_null=True), nullable=True),
        _ts("created_at"),
        _ts("revoked_at", nullable=True),
    )
    op.create_table(
        "api_requests",
        sa.Column(
            "request_id",
            sa.String(64),
            sa.ForeignKey("approval_requests.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("key_name", sa.String(100), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("callback_url", sa.Text, nullable=True),
        _ts("created_at"),
        sa.UniqueConstraint("key_name", "idempotency_key", name="uq_api_requests_idempotency"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("request_id", sa.String(64), nullable=False, unique=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        _ts("next_attempt_at"),
        sa.Column("last_error", sa.Text, nullable=True),
        _ts("created_at"),
        _ts("delivered_at", nullable=True),
    )
    op.create_index(
        "ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_table("api_requests")
    op.drop_table("api_keys")
    op.drop_column("approval_requests", "api_spec")
