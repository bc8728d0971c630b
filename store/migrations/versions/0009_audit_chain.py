"""The audit hash chain: each event stores the hash of the previous one; the chain's head and
anchor; the SIEM webhook's cursor.

Events written before this migration are not chained: the anchor starts the chain after them.

Revision ID: 0009_audit_chain
Revises: 0008_durable_slack
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_audit_chain"
down_revision = "0008_durable_slack"
branch_labels = None
depends_on = None

GENESIS = "0" * 64
_BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("audit_events", sa.Column("agent_id", sa.String(200), nullable=True))
    op.add_column("audit_events", sa.Column("tenant", sa.String(64), nullable=True))
    op.add_column("audit_events", sa.Column("prev_hash", sa.String(64), nullable=True))
    op.add_column("audit_events", sa.Column("hash", sa.String(64), nullable=True))
    chain = op.create_table(
        "audit_chain",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("head_id", _BIG, nullable=True),
        sa.Column("head_hash", sa.String(64), nullable=False),
        sa.Column("anchor_id", _BIG, nullable=False),
        sa.Column("anchor_hash", sa.String(64), nullable=False),
    )
    op.create_table(
        "audit_webhook_cursor",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("delivered_id", _BIG, nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
    )
    last = op.get_bind().scalar(sa.text("SELECT max(id) FROM audit_events")) or 0
    op.bulk_insert(
        chain,
        [
            {
                "id": 1,
                "head_id": last or None,
                "head_hash": GENESIS,
                "anchor_id": last,
                "anchor_hash": GENESIS,
            }
        ],
    )


def downgrade() -> None:
    op.drop_table("audit_webhook_cursor")
    op.drop_table("audit_chain")
    with op.batch_alter_table("audit_events") as batch:
        for name in ("hash", "prev_hash", "tenant", "agent_id"):
            batch.drop_column(name)
