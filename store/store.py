"""`Store`: the one object the service uses for durable state. It holds the repositories
(`runs`, `requests`, `standing`, `audit`, `api`; store/repos/) and the lifecycle of the
database under them; nothing outside `store/` reaches the database itself."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from store import audit as audit_ops
from store import migrate
from store import runs as run_ops
from store.db import DEFAULT_URL, Database
from store.rekey import Rekeyed, reencrypt_report
from store.repos import (
    ApiRepository,
    AuditRepository,
    RequestRepository,
    RunRepository,
    StandingRepository,
)

if TYPE_CHECKING:
    from store.intake import Intake
    from store.outbox import Outbox


def default_replica_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Store:
    """Durable state on SQLite (one file) or PostgreSQL (several replicas)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        replica_id: str | None = None,
        lease_seconds: float = 30.0,
        encryption_keys: Sequence[str] = (),
    ) -> None:
        """`encryption_keys`: Fernet keys; when given, run state, request arguments, edited
        arguments, outputs and reasons are encrypted with the first and read with any."""
        self.db = Database(url, encryption_keys)
        """The engine: for `store/` alone (tests/structure/test_store_boundary.py)."""
        self._encryption_keys = tuple(encryption_keys)
        self.replica_id = replica_id or default_replica_id()
        self.lease_seconds = lease_seconds
        self.runs = RunRepository(self.db, self.replica_id, lease_seconds)
        self.requests = RequestRepository(self.db, self.replica_id, lease_seconds)
        self.standing = StandingRepository(self.db)
        self.audit = AuditRepository(self.db)
        self.api = ApiRepository(self.db)

    def __repr__(self) -> str:  # never shows the URL: it may carry a password
        return f"Store(dialect={self.db.dialect!r}, replica_id={self.replica_id!r})"

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self.db.dialect

    # -- the Slack edges: built on this store's database ---------------------------------

    def outbox(self) -> Outbox:
        """A new outbox repository (what sayso shows in Slack, as rows). Hold one per process:
        its wake-up subscribers are its own."""
        from store.outbox import Outbox

        return Outbox(self.db)

    def intake(self) -> Intake:
        """A new intake repository (what people did in Slack, as rows)."""
        from store.intake import Intake

        return Intake(self.db)

    def own_engine(self) -> Store:
        """On PostgreSQL, a store on the same database through an engine (a connection pool)
        of its own, so its writes never wait behind this one's (close it when done); on
        SQLite, this store (one writer per process, one lock)."""
        if not self.db.is_postgres:
            return self
        return Store(
            self.db.url,
            replica_id=self.replica_id,
            lease_seconds=self.lease_seconds,
            encryption_keys=self._encryption_keys,
        )

    # -- lifecycle -----------------------------------------------------------------------

    async def upgrade(self) -> None:
        await migrate.upgrade(self.db)

    async def schema_versions(self) -> tuple[str | None, str]:
        """(the migration the database is at, None when it has none; the newest there is)."""
        return await migrate.current_version(self.db), migrate.head_version()

    async def close(self) -> None:
        await self.db.close()

    async def reencrypt(self, batch: int = 200) -> int:
        """Rewrite every encrypted column with the first key (plaintext rows get encrypted);
        returns how many values changed."""
        return (await reencrypt_report(self.db, batch)).changed

    async def reencrypt_report(self, batch: int = 200) -> Rekeyed:
        """`reencrypt`, with what it found on the way (values no key reads)."""
        return await reencrypt_report(self.db, batch)

    async def ping(self) -> bool:
        return await self.db.ping()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- dedup, retention ----------------------------------------------------------------

    async def first_delivery(self, event_id: str) -> bool:
        """True the first time a Slack event id is seen (a retry or replay: False)."""
        return await audit_ops.first_delivery(self.db, event_id)

    async def purge(self, older_than: timedelta) -> int:
        """Delete ended runs not updated for `older_than`, with their requests and approvers,
        and Slack event ids older than that. Audit events are kept. Returns the runs deleted."""
        await audit_ops.purge_events(self.db, older_than)
        return await run_ops.purge(self.db, older_than)
