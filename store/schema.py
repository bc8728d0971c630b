"""Tables of the durable store (SQLAlchemy Core) and the column types they share.

Run state, request arguments, edited arguments, outputs, reasons and audit details (they may
quote a reason) are `Encrypted*` columns: encrypted when the store has keys (store/crypto.py).

Migrations in `store/migrations/versions/` create exactly these tables; a test compares them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from store.crypto import EncryptedJSON, EncryptedText

metadata = sa.MetaData()


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend.

    PostgreSQL keeps `timestamptz`. SQLite has no time zones: values are stored as naive UTC
    text in one fixed format, so comparisons in SQL order them correctly.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"Naive datetime {value!r}: the store needs timezone-aware values")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# BIGINT ids on PostgreSQL; SQLite autoincrements only an INTEGER primary key.
BigId: Any = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

runs = sa.Table(
    "runs",
    metadata,
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
    sa.Column("request_text", EncryptedText, nullable=False),  # an API request's title
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("lease_owner", sa.String(200)),
    sa.Column("lease_expires_at", UTCDateTime),
    sa.Column("state", EncryptedText),
    sa.Column("state_schema_version", sa.Integer),
    # The version whose end (answer, failure, status) was put to Slack: a completed or failed
    # run with an older one was never shown (its process died first); the sweep shows it.
    sa.Column("shown_version", sa.Integer),
    sa.Index("ix_runs_thread", "channel_id", "thread_ts"),
    sa.Index("ix_runs_status_lease", "status", "lease_expires_at"),
    sa.Index("ix_runs_status_created", "status", "created_at"),
    sa.Index("ix_runs_requester_created", "requester", "created_at"),
    sa.Index("ix_runs_status_updated", "status", "updated_at"),
    sa.Index("ix_runs_created", "created_at"),
)

approval_requests = sa.Table(
    "approval_requests",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column(
        "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("pause_seq", sa.Integer, nullable=False),
    sa.Column("call_id", sa.String(200), nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("tool_name", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("arguments", EncryptedJSON()),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("decided_by", sa.String(64)),
    sa.Column("decided_at", UTCDateTime),
    sa.Column("reason", EncryptedText),
    sa.Column("edited_arguments", EncryptedJSON()),
    sa.Column("output", EncryptedJSON()),
    sa.Column("channel_id", sa.String(64)),
    sa.Column("message_ts", sa.String(64)),
    sa.Column("expires_at", UTCDateTime, nullable=False),
    sa.Column("requester", sa.String(64)),
    sa.Column("allow_self_approval", sa.Boolean, nullable=False),
    sa.Column("interrupted", sa.Boolean, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("reminded_at", UTCDateTime, nullable=True),
    sa.Column("min_approvals", sa.Integer, nullable=False, server_default="1"),
    sa.Column("require_reason", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("rule", sa.String(200)),
    sa.Column("escalate_at", UTCDateTime),
    sa.Column("escalate_to", sa.JSON(none_as_null=True)),
    sa.Column("escalated_at", UTCDateTime),
    sa.Column("standing_seconds", sa.Integer),
    sa.Column("api_spec", EncryptedJSON(), nullable=True),  # title, schema, context
    sa.UniqueConstraint("run_id", "pause_seq", "call_id", name="uq_requests_run_pause_call"),
    sa.Index("ix_requests_run_status", "run_id", "pause_seq", "status"),
    sa.Index("ix_requests_status_expires", "status", "expires_at"),
    sa.Index("ix_requests_status_created", "status", "created_at"),
    sa.Index("ix_requests_message", "channel_id", "message_ts"),
    sa.Index("ix_requests_status_escalate", "status", "escalate_at"),
)

request_approvers = sa.Table(
    "request_approvers",
    metadata,
    sa.Column(
        "request_id",
        sa.String(64),
        sa.ForeignKey("approval_requests.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("principal", sa.String(64), primary_key=True),
    sa.Index("ix_request_approvers_principal", "principal", "request_id"),
)

request_approvals = sa.Table(
    "request_approvals",
    metadata,
    sa.Column(
        "request_id",
        sa.String(64),
        sa.ForeignKey("approval_requests.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("approver", sa.String(64), primary_key=True),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("args_hash", sa.String(64), nullable=False),
)
"""The approvals counted so far towards a request's quorum: one row per person (a second
click by the same person inserts nothing)."""

# The table (and its columns `granted_by`, `granted_at`) keeps its first name: renaming it
# would take a migration that every deployed database runs, for no change of behaviour.
# In code it is `StandingApproval` (store/records.py), `store.standing` (store/repos/).
standing_grants = sa.Table(
    "standing_grants",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("agent_id", sa.String(200), nullable=False),
    sa.Column("tool_name", sa.String(200), nullable=False),
    sa.Column("channel_id", sa.String(64), nullable=False),
    sa.Column("thread_ts", sa.String(64), nullable=False),
    sa.Column("granted_by", sa.String(64), nullable=False),
    sa.Column("granted_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
    sa.Column("request_id", sa.String(64)),
    sa.Column("message_ts", sa.String(64)),
    sa.Column("revoked_by", sa.String(64)),
    sa.Column("revoked_at", UTCDateTime),
    sa.Index("ix_standing_grants_thread", "channel_id", "thread_ts", "tool_name"),
)
"""Standing approvals: calls of one tool in one thread run without a card until then."""

audit_events = sa.Table(
    "audit_events",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("actor", sa.String(64)),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("run_id", sa.String(64)),
    sa.Column("call_id", sa.String(200)),
    sa.Column("request_id", sa.String(64)),
    sa.Column("tool_name", sa.String(200)),
    sa.Column("args_hash", sa.String(64)),
    sa.Column("outcome", sa.String(32), nullable=False),
    sa.Column("detail", EncryptedText),  # may quote a reason
    sa.Index("ix_audit_run", "run_id", "id"),
    sa.Index("ix_audit_request", "request_id"),
    sa.Index("ix_audit_at", "at"),
)

slack_events = sa.Table(
    "slack_events",
    metadata,
    sa.Column("event_id", sa.String(128), primary_key=True),
    sa.Column("received_at", UTCDateTime, nullable=False),
    sa.Index("ix_slack_events_received", "received_at"),
)

# -- the approval API (issue 14) -------------------------------------------------------------

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("webhook_secret", EncryptedText, nullable=False),
    sa.Column("channels", sa.JSON(none_as_null=True)),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("revoked_at", UTCDateTime),
    # the key's own policy (issue 21, finding 7); NULL: the defaults
    sa.Column("approvers", sa.JSON(none_as_null=True)),
    sa.Column("min_approvals", sa.Integer),
    sa.Column("allow_self_approval", sa.Boolean),
    sa.Column("expires_in", sa.Integer),
    sa.Column("per_minute", sa.Integer),
)

api_requests = sa.Table(
    "api_requests",
    metadata,
    sa.Column(
        "request_id",
        sa.String(64),
        sa.ForeignKey("approval_requests.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("key_name", sa.String(100), nullable=False),
    sa.Column("idempotency_key", sa.String(200)),
    sa.Column("callback_url", EncryptedText),  # may carry a token
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("body_hash", sa.String(64)),  # sha256 of the request, for its idempotency key
    sa.UniqueConstraint("key_name", "idempotency_key", name="uq_api_requests_idempotency"),
)

api_quota = sa.Table(
    "api_quota",
    metadata,
    # requests per key per minute, counted here so that every replica shares one count
    sa.Column("key_name", sa.String(100), primary_key=True),
    sa.Column("minute", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
    sa.Column("count", sa.Integer, nullable=False),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("request_id", sa.String(64), nullable=False, unique=True),
    sa.Column("url", EncryptedText, nullable=False),  # may carry a token
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", UTCDateTime, nullable=False),
    sa.Column("last_error", sa.Text),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("delivered_at", UTCDateTime),
    sa.Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
)

# -- durable Slack: the intake and the outbox (issue 22; store/intake.py, store/outbox.py) ------

slack_intake = sa.Table(
    "slack_intake",
    metadata,
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("payload", EncryptedJSON(), nullable=False),  # may quote a reason or an answer
    sa.Column("status", sa.String(16), nullable=False),  # pending | done
    sa.Column("received_at", UTCDateTime, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("claim_owner", sa.String(200)),
    sa.Column("claim_expires_at", UTCDateTime),
    sa.Column("done_at", UTCDateTime),
    sa.Column("result", sa.JSON(none_as_null=True)),
    sa.Index("ix_slack_intake_due", "status", "claim_expires_at"),
    sa.Index("ix_slack_intake_received", "received_at"),
)
"""What a person did in Slack, inserted before the ack (keyed by Slack's own ids)."""

slack_outbox = sa.Table(
    "slack_outbox",
    metadata,
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),  # message | ephemeral | home | stream
    sa.Column("state", sa.String(16), nullable=False),  # pending | sent | dropped | failed
    sa.Column("team_id", sa.String(64)),
    sa.Column("channel", sa.String(64)),
    sa.Column("thread_ts", sa.String(64)),
    sa.Column("thread_key", sa.String(255)),  # the thread is this row's message
    sa.Column("after_key", sa.String(255)),  # posted only once this row's message is
    sa.Column("user_id", sa.String(64)),
    sa.Column("payload", EncryptedJSON(), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("sent_version", sa.Integer, nullable=False),
    sa.Column("ts", sa.String(64)),
    sa.Column("progress", sa.Integer, nullable=False),  # streams: characters appended
    sa.Column("unsure", sa.Boolean, nullable=False),  # a post may have reached Slack
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("pending_since", UTCDateTime, nullable=False),
    sa.Column("claim_token", sa.String(64)),
    sa.Column("claim_expires_at", UTCDateTime),
    sa.Column("last_error", sa.Text),
    sa.Index("ix_slack_outbox_due", "state", "next_attempt_at"),
    sa.Index("ix_slack_outbox_pending", "state", "pending_since"),
)
"""One row per logical Slack message (or App Home, ephemeral, stream): its latest state."""

slack_senders = sa.Table(
    "slack_senders",
    metadata,
    sa.Column("scope", sa.String(64), primary_key=True),  # a workspace, or "*" for all
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
)
"""Which dispatcher sends to Slack now (a lease): Slack's limits are per workspace, so one
sender paces them exactly; any replica takes over when the lease lapses."""

# -- the audit hash chain and its webhook (issue 23) ------------------------------------------

for _column in (
    sa.Column("agent_id", sa.String(200)),
    sa.Column("tenant", sa.String(64)),
    sa.Column("prev_hash", sa.String(64)),
    sa.Column("hash", sa.String(64)),
):
    audit_events.append_column(_column)

audit_chain = sa.Table(
    "audit_chain",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("head_id", BigId),
    sa.Column("head_hash", sa.String(64), nullable=False),
    sa.Column("anchor_id", BigId, nullable=False),
    sa.Column("anchor_hash", sa.String(64), nullable=False),
)
"""One row: the chain's head (the last chained event and its hash), locked by every append so
appends are serialized, and its anchor (where it starts: the last event purged by audit
retention, or the last event written before the chain existed)."""

audit_webhook_cursor = sa.Table(
    "audit_webhook_cursor",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("delivered_id", BigId, nullable=False),
    sa.Column("lease_owner", sa.String(200)),
    sa.Column("lease_expires_at", UTCDateTime),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", UTCDateTime),
    sa.Column("last_error", sa.Text),
)
"""One row: the last audit event the SIEM webhook acknowledged (SAYSO_AUDIT_WEBHOOK); the
replica holding the lease sends the events after it, in order, at least once."""
