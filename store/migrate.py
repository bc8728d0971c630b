"""Apply the packaged Alembic migrations (no alembic.ini needed).

Safe when several replicas start together: on PostgreSQL the upgrade runs in one transaction
holding a transaction-level advisory lock; on SQLite it runs in a `BEGIN IMMEDIATE`
transaction, so other upgraders wait on the database lock. Whoever comes second finds the
schema at head and does nothing.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.script.revision import ResolutionError
from alembic.util import CommandError
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from store.db import Database

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "sayso_alembic_version"
# An arbitrary constant naming sayso's schema upgrade among PostgreSQL advisory locks.
ADVISORY_LOCK_KEY = 0x5A7_5050_0001

log = logging.getLogger("sayso.store")


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    cfg.attributes["version_table"] = VERSION_TABLE
    return cfg


def _upgrade(connection: Connection, revision: str) -> None:
    cfg = alembic_config(connection)
    newer = _newer_than_this_release(connection, cfg)
    if newer is not None:
        # A rolling upgrade: a newer release migrated the schema (migrations are additive
        # first), and this older one still runs against it. Nothing to do, nothing to refuse.
        log.warning("event=schema_newer_than_release revision=%s: not upgrading", newer)
        return
    command.upgrade(cfg, revision)


def _newer_than_this_release(connection: Connection, cfg: Config) -> str | None:
    """The database's revision when this release's migrations do not know it, else None."""
    if not connection.dialect.has_table(connection, VERSION_TABLE):
        return None
    current = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    if current is None:
        return None
    try:
        ScriptDirectory.from_config(cfg).get_revision(str(current))
    except (ResolutionError, CommandError):
        return str(current)
    return None


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


def head_version() -> str:
    """The newest migration this release has."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def current_version(db: Database) -> str | None:
    """The migration the database is at (None: it has none yet)."""
    try:
        async with db.read() as conn:
            found = await conn.scalar(text(f"SELECT version_num FROM {VERSION_TABLE}"))
    except Exception:
        return None
    return str(found) if found is not None else None
