"""Initial schema: runs, approval requests and approvers, audit events, Slack events.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _json(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.JSON(none_as_null=True), nullable=True)


def upgrade() -> None:
    # Longer than 60 lines because it creates the initial schema.
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("agent_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("pause_kind", sa.String(32)),
        sa.Column("pause_step", sa.Integer),
        sa.Column("pause_seq", sa.Integer, nullable=False, server_default="0"),
        sa.Column("requester", sa.String(64)),
        sa.Column("team_id", sa.String(64)),
        sa.Column("channel_id", sa.String(64)),
        sa.Column("thread_ts", sa.String(64)),
        sa.Column("request_text", sa.Text, nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.String(200)),
        _ts("lease_expires_at", nullable=True),
        sa.Column("state", sa.Text),
        sa.Column("state_schema_version", sa.Integer),
    )
    op.create_index("ix_runs_thread", "runs", ["channel_id", "thread_ts"])
    op.create_index("ix_runs_status_lease", "runs", ["status", "lease_expires_at"])
    op.create_index("ix_runs_status_created", "runs", ["status", "created_at"])
    op.create_index("ix_runs_requester_created", "runs", ["requester", "created_at"])
    op.create_index("ix_runs_status_updated", "runs", ["status", "updated_at"])
    op.create_index("ix_runs_created", "runs", ["created_at"])

    op.create_table(
        "approval_requests",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "run_id",
            sa.String(64),
            sa.ForeignKey("runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("pause_seq", sa.Integer, nullable=False),
        sa.Column("call_id", sa.String(200), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("tool_name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        _json("arguments"),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("decided_by", sa.String(64)),
        _ts("decided_at", nullable=True),
        sa.Column("reason", sa.Text),
        _json("edited_arguments"),
        _json("output"),
        sa.Column("channel_id", sa.String(64)),
        sa.Column("message_ts", sa.String(64)),
        _ts("expires_at"),
        sa.Column("requester", sa.String(64)),
        sa.Column("allow_self_approval", sa.Boolean, nullable=False),
        sa.Column("interrupted", sa.Boolean, nullable=False),
        _ts("created_at"),
        sa.UniqueConstraint("run_id", "pause_seq", "call_id", name="uq_requests_run_pause_call"),
    )
    op.create_index(
        "ix_requests_run_status", "approval_requests", ["run_id", "pause_seq", "status"]
    )
    op.create_index("ix_requests_status_expires", "approval_requests", ["status", "expires_at"])
    op.create_index("ix_requests_status_created", "approval_requests", ["status", "created_at"])
    op.create_index("ix_requests_message", "approval_requests", ["channel_id", "message_ts"])

    op.create_table(
        "request_approvers",
        sa.Column(
            "request_id",
            sa.String(64),
            sa.ForeignKey("approval_requests.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("principal", sa.String(64), primary_key=True),
    )
    op.create_index(
        "ix_request_approvers_principal", "request_approvers", ["principal", "request_id"]
    )

    op.create_table(
        "audit_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        _ts("at"),
        sa.Column("actor", sa.String(64)),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(64)),
        sa.Column("call_id", sa.String(200)),
        sa.Column("request_id", sa.String(64)),
        sa.Column("tool_name", sa.String(200)),
        sa.Column("args_hash", sa.String(64)),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text),
    )
    op.create_index("ix_audit_run", "audit_events", ["run_id", "id"])
    op.create_index("ix_audit_request", "audit_events", ["request_id"])
    op.create_index("ix_audit_at", "audit_events", ["at"])

    op.create_table(
        "slack_events",
        sa.Column("event_id", sa.String(128), primary_key=True),
        _ts("received_at"),
    )
    op.create_index("ix_slack_events_received", "slack_events", ["received_at"])


def downgrade() -> None:
    op.drop_table("slack_events")
    op.drop_table("audit_events")
    op.drop_table("request_approvers")
    op.drop_table("approval_requests")
    op.drop_table("runs")
