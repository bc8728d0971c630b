"""Security, round two (issue 21): the body hash of an idempotent API request, and each API
key's own policy (approvers, quorum, self-approval, default expiry, requests per minute).

Revision ID: 0007_security
Revises: 0006_api
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_security"
down_revision = "0006_api"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_requests") as batch:
        batch.add_column(sa.Column("body_hash", sa.String(64), nullable=True))
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("approvers", sa.JSON(none_as_null=True), nullable=True))
        batch.add_column(sa.Column("min_approvals", sa.Integer, nullable=True))
        batch.add_column(sa.Column("allow_self_approval", sa.Boolean, nullable=True))
        batch.add_column(sa.Column("expires_in", sa.Integer, nullable=True))
        batch.add_column(sa.Column("per_minute", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        for name in (
            "per_minute",
            "expires_in",
            "allow_self_approval",
            "min_approvals",
            "approvers",
        ):
            batch.drop_column(name)
    with op.batch_alter_table("api_requests") as batch:
        batch.drop_column("body_hash")
