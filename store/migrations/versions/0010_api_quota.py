"""API key quotas counted in the database: every replica shares one count per key and minute
(issue 21, finding 10).

Revision ID: 0010_api_quota
Revises: 0009_audit_chain
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_api_quota"
down_revision = "0009_audit_chain"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_quota",
        sa.Column("key_name", sa.String(100), primary_key=True),
        sa.Column("minute", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("count", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("api_quota")
