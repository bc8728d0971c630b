"""sayso's durable store: runs, leases, approval requests, standing approvals, the audit trail,
the approval API's keys and event dedup (SQLAlchemy), behind `Store` and its repositories.

SQLite (`sqlite+aiosqlite:///sayso.db`) for one process; PostgreSQL
(`postgresql+asyncpg://...`) for several replicas.
"""

from store.accessor import StoreStateAccessor
from store.crypto import EncryptionKeyError
from store.db import DEFAULT_URL
from store.records import (
    ApprovalRequestRecord,
    AuditEvent,
    DecisionResult,
    Lease,
    LeaseLostError,
    RequestPolicy,
    RequestSpec,
    RequestState,
    RunRecord,
    StandingApproval,
    args_hash,
)
from store.starts import StartLimit, StartLimitReached
from store.store import Store

__all__ = [
    "DEFAULT_URL",
    "ApprovalRequestRecord",
    "AuditEvent",
    "DecisionResult",
    "EncryptionKeyError",
    "Lease",
    "LeaseLostError",
    "RequestPolicy",
    "RequestSpec",
    "RequestState",
    "RunRecord",
    "StandingApproval",
    "StartLimit",
    "StartLimitReached",
    "Store",
    "StoreStateAccessor",
    "args_hash",
]
