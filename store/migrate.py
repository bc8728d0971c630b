"""Apply the packaged Alembic migrations (no alembic.ini needed).

Safe when several replicas start together: on PostgreSQL the upgrade runs in one transaction
holding a transaction-level advisory lock; on SQLite it runs in a `BEGIN IMMEDIATE`
transaction, so other upgraders wait on the database lock. Whoever comes second finds the
schema at head and does nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from store.db import Database

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "sayso_alembic_version"
# An arbitrary constant naming sayso's schema upgrade among PostgreSQL advisory locks.
ADVISORY_LOCK_KEY = 0x5A7_5050_0001


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    cfg.attributes["version_table"] = VERSION_TABLE
    return cfg


def _upgrade(connection: Connection, revision: str) -> None:
    command.upgrade(alembic_config(connection), revision)


async def upgrade(db: Database, revision: str = "head") -> None:
    """Apply migrations up to `revision`. On SQLite a locked database (another process
    creating the schema at the same moment) is retried: whoever comes second finds head."""
    for attempt in range(5):
        try:
            await _upgrade_once(db, revision)
            return
        except OperationalError as exc:
            if not db.is_sqlite or "locked" not in str(exc) or attempt == 4:
                raise
            await asyncio.sleep(0.2 * (attempt + 1))


async def _upgrade_once(db: Database, revision: str) -> None:
    async with db.write() as conn:
        if db.is_postgres:
            await conn.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY}
            )
        await conn.run_sync(_upgrade, revision)
