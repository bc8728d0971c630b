"""A fresh PostgreSQL database per test, next to the one SAYSO_TEST_POSTGRES_URL names.

Unset, PostgreSQL tests are skipped, unless SAYSO_REQUIRE_POSTGRES=1 (CI), which makes them
fail instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

PG_URL = os.environ.get("SAYSO_TEST_POSTGRES_URL")
REQUIRE_PG = os.environ.get("SAYSO_REQUIRE_POSTGRES") == "1"


def need_postgres(why: str = "PostgreSQL tests") -> str:
    """The base URL, or skip the test (fail it under SAYSO_REQUIRE_POSTGRES=1)."""
    if PG_URL:
        return PG_URL
    if REQUIRE_PG:
        pytest.fail("SAYSO_REQUIRE_POSTGRES=1 but SAYSO_TEST_POSTGRES_URL is not set")
    pytest.skip(
        f"{why} skipped: set SAYSO_TEST_POSTGRES_URL="
        "postgresql+asyncpg://postgres@127.0.0.1:5432/test to run them"
    )


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
