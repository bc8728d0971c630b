"""Store fixtures: every test runs on a real SQLite file and on the machine's PostgreSQL.

PostgreSQL: set SAYSO_TEST_POSTGRES_URL (e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test).
Each test gets a fresh database `sayso_t_<random>`, dropped afterwards. Unset, the
PostgreSQL cases are skipped, unless SAYSO_REQUIRE_POSTGRES=1 (CI), which makes them fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store import Store
from tests.helpers.postgres import fresh_postgres, need_postgres
from tests.storage.store_helpers import StoreFactory


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database (no tables yet) on each backend."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}"
        return
    async with fresh_postgres(need_postgres("PostgreSQL store tests")) as url:
        yield url


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
