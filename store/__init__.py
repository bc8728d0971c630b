"""sayso's durable store: runs, leases, approval requests, audit and event dedup (SQLAlchemy).

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
    GrantRecord,
    Lease,
    LeaseLostError,
    RequestPolicy,
    RunRecord,
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
    "GrantRecord",
    "Lease",
    "LeaseLostError",
    "RequestPolicy",
    "RunRecord",
    "StartLimit",
    "StartLimitReached",
    "Store",
    "StoreStateAccessor",
    "args_hash",
]
