"""Engine setup: SQLite pragmas and serialized write transactions, PostgreSQL pooling.

`Database.write()` opens a write transaction. On SQLite it is `BEGIN IMMEDIATE`, so writers
queue on the database lock (up to the busy timeout) instead of failing half-way, and every
conditional UPDATE sees the latest committed row. Reads use a plain deferred `BEGIN`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, bindparam, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from store import crypto
from store.write_turns import WriteTurns

DEFAULT_URL = "sqlite+aiosqlite:///sayso.db"
SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_CACHE_KIB = 512
"""Page cache per SQLite connection (SQLite's default is 2,000 KiB). Each pooled connection
fills its own cache once the database outgrows it, and a write by any connection makes the
others drop theirs at their next read, so the memory freed and taken again stays with the
connection's thread (a glibc arena per aiosqlite thread): at the default the bot's RSS rose
15-18 MB once the database held a few thousand paused runs, 5 MB at 512 KiB, with no
measurable change in the inbox query (docs/benchmarks.md, "Memory per paused run")."""
_IMMEDIATE = "sayso_immediate"
READY_CHANNEL = "sayso_ready_runs"
"""PostgreSQL NOTIFY channel: a run may be ready (the payload is its id; store/wakeups.py)."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control from the driver: our "begin" hook emits BEGIN itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    finally:
        cursor.close()


_PRIVATE = 0o600
_SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def _sqlite_path(url: str) -> str | None:
    """The database file of a SQLite URL (None for an in-memory database)."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


def make_private(path: str) -> None:
    """Create the SQLite file readable by its owner only, and keep it and its side files so.

    SQLite creates the -wal and -shm files with the mode of the database file; the chmod
    also tightens files created before this rule. An existing database file is never opened
    here: closing any descriptor of it would drop this process's SQLite locks on it (POSIX
    locks belong to the process), and another process closing its last connection would then
    delete the -wal and -shm files under this one's feet."""
    if not os.path.exists(path):
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, _PRIVATE))
    for suffix in _SQLITE_SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(path + suffix, _PRIVATE)


def _secure_delete(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA secure_delete = ON")
    finally:
        cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    immediate = conn.get_execution_options().get(_IMMEDIATE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: str) -> AsyncEngine:
    """One async engine; SQLite connections get WAL, a busy timeout and foreign keys."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_path(url)
        if path is not None:
            make_private(path)
        engine = create_async_engine(
            url,
            pool_pre_ping=True,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S},
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        if path is not None:
            event.listen(engine.sync_engine, "connect", lambda *_: make_private(path))
        return engine
    # LIFO: the connection used last is used next, so a few stay warm and are never pinged
    # (`_ping_if_idle`); in FIFO order every pooled connection took its turn and sat idle long
    # enough to be pinged again, one more round trip per transaction when decisions come
    # one at a time
    engine = create_async_engine(url, pool_size=10, max_overflow=5, pool_use_lifo=True)
    event.listen(engine.sync_engine.pool, "checkout", _ping_if_idle)
    event.listen(engine.sync_engine.pool, "checkin", _note_checkin)
    return engine


IDLE_PING_SECONDS = 2.0
"""A pooled PostgreSQL connection idle longer than this is pinged before use (a dead one is
replaced). One used moments ago is not: a ping at every checkout (`pool_pre_ping`) was one
more round trip per transaction (a read in its own transaction: 0.27 ms of CPU without it,
0.4-0.7 ms with it; docs/benchmarks.md). A connection that died within that short window fails
its statement once; SQLAlchemy then recycles every connection of the pool."""
_CHECKED_IN = "sayso_checked_in"


def _note_checkin(_dbapi_connection: Any, record: Any) -> None:
    if record is not None:
        record.info[_CHECKED_IN] = time.monotonic()


def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    """Pool checkout: ping a connection that sat idle (or is new to this check); a failed
    ping makes the pool discard it and check out another (DisconnectionError)."""
    last = record.info.get(_CHECKED_IN)
    if last is not None and time.monotonic() - last < IDLE_PING_SECONDS:
        return
    try:
        dbapi_connection.ping()
    except Exception as exc:
        raise DisconnectionError(f"stale pooled connection: {type(exc).__name__}") from None


class Database:
    """An engine plus the two kinds of transaction the store uses."""

    def __init__(self, url: str, encryption_keys: Sequence[str] = ()) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        self.encrypted = bool(encryption_keys)
        crypto.attach(self.engine.dialect, encryption_keys)
        if self.encrypted and self.is_sqlite_url(url):
            # freed pages are zeroed: a value rewritten encrypted leaves no plaintext behind
            event.listen(self.engine.sync_engine, "connect", _secure_delete)
        # SQLite has one writer at a time. Writers of this process take turns here (urgent
        # ones first) instead of polling the file lock with SQLite's busy-wait backoff.
        self._write_turns = WriteTurns() if self.is_sqlite_url(url) else None

    @staticmethod
    def is_sqlite_url(url: str) -> bool:
        return make_url(url).get_backend_name() == "sqlite"

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @asynccontextmanager
    async def write(
        self, *, single: bool = False, urgent: bool = False
    ) -> AsyncIterator[AsyncConnection]:
        """A write transaction: committed when the block ends, rolled back on an exception.

        `single=True`: the block makes writes that need no transaction around them (one
        statement, or statements each sound on its own): on PostgreSQL they run in autocommit,
        without the BEGIN and COMMIT round trips; on SQLite it is the same transaction.
        `urgent=True`: someone waits for it (an ack): on SQLite it takes the next writer's turn
        (store/write_turns.py); on PostgreSQL writers do not queue in the process."""
        if self._write_turns is None:
            if single:
                async with self.engine.connect() as conn:
                    await conn.execution_options(isolation_level="AUTOCOMMIT")
                    yield conn
                return
            async with self.engine.connect() as conn, conn.begin():
                yield conn
            return
        async with self._write_turns.turn(urgent=urgent), self.engine.connect() as conn:
            await conn.execution_options(**{_IMMEDIATE: True})
            async with conn.begin():
                yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reading. On PostgreSQL it runs without a transaction (autocommit):
        each statement sees what is committed when it starts, which is all a READ COMMITTED
        transaction gives anyway, and it saves the BEGIN and ROLLBACK round trips (two of the
        three a one-statement read cost, the largest part of the bot's CPU per decision).
        On SQLite it is a deferred transaction: one snapshot for the block, rolled back."""
        async with self.engine.connect() as conn:
            if self._write_turns is None:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
            yield conn

    async def ping(self) -> bool:
        try:
            async with self.read() as conn:
                await conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    async def close(self) -> None:
        await self.engine.dispose()


def param(name: str, column: ColumnElement[Any]) -> BindParameter[Any]:
    """The bind parameter `p_<name>`, typed as `column`: for statements built once and
    executed with their values (docs/architecture.md, "The store")."""
    return bindparam("p_" + name, type_=column.type)


def insert_ignore(db: Database, table: Any) -> Any:
    """`INSERT ... ON CONFLICT DO NOTHING` for the engine's dialect (call `.values()` on it)."""
    return insert_ignore_for(db.dialect, table)


def insert_ignore_for(dialect: str, table: Any) -> Any:
    """`insert_ignore` for a dialect's name (`postgresql` or `sqlite`)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise NotImplementedError(f"sayso's store supports SQLite and PostgreSQL, not {dialect}")
