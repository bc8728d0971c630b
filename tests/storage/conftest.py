"""Store fixtures: every test runs on a real SQLite file and on the machine's PostgreSQL.

PostgreSQL: set SAYSO_TEST_POSTGRES_URL (e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test).
Each test gets a fresh database `sayso_t_<random>`, dropped afterwards. Unset, the
PostgreSQL cases are skipped, unless SAYSO_REQUIRE_POSTGRES=1 (CI), which makes them fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from store import Store

PG_URL = os.environ.get("SAYSO_TEST_POSTGRES_URL")
REQUIRE_PG = os.environ.get("SAYSO_REQUIRE_POSTGRES") == "1"


@asynccontextmanager
async def fresh_postgres(base_url: str) -> AsyncIterator[str]:
    """CREATE DATABASE sayso_t_<random> next to the given one; DROP it afterwards."""
    name = f"sayso_t_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(base_url).set(database=name).render_as_string(hide_password=False)
        finally:
            async with admin.connect() as conn:
                await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()


def _need_postgres() -> str:
    if PG_URL:
        return PG_URL
    if REQUIRE_PG:
        pytest.fail("SAYSO_REQUIRE_POSTGRES=1 but SAYSO_TEST_POSTGRES_URL is not set")
    pytest.skip(
        "PostgreSQL store tests skipped: set SAYSO_TEST_POSTGRES_URL="
        "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres to run them"
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database (no tables yet) on each backend."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}"
        return
    async with fresh_postgres(_need_postgres()) as url:
        yield url


StoreFactory = Callable[..., Awaitable[Store]]


@pytest.fixture
async def make_store(db_url: str) -> AsyncIterator[StoreFactory]:
    """Open more Stores (replicas) on the test's database; all are closed at the end."""
    opened: list[Store] = []

    async def make(**kwargs: object) -> Store:
        s = Store(db_url, **kwargs)  # type: ignore[arg-type]
        opened.append(s)
        return s

    yield make
    for s in opened:
        await s.close()


@pytest.fixture
async def store(make_store: StoreFactory) -> Store:
    s = await make_store(replica_id="replica-a")
    await s.upgrade()
    return s
