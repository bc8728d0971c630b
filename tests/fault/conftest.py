"""Fixtures for the fault suite: a sandbox Slack with many people, a fake model that answers
concurrent runs correctly, and replicas as real subprocesses on one PostgreSQL database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox import SlackSandbox
from bot.sandbox.state import Person, default_people
from bot.testing import FakeModelServer
from tests.fault.agents import respond
from tests.fault.cluster import Cluster
from tests.fault.slack import PEOPLE, SECRET, TOKEN, clicker
from tests.helpers.postgres import fresh_postgres, need_postgres


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    server = FakeModelServer(responder=respond)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    people = default_people() + [
        Person(clicker(i), f"p{i:03d}", f"Person {i:03d}") for i in range(PEOPLE)
    ]
    sb = SlackSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN, people=people)
    await sb.start(host="127.0.0.1", port=0)
    try:
        yield sb
    finally:
        await sb.stop()


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A fresh PostgreSQL database for this test (dropped afterwards)."""
    async with fresh_postgres(need_postgres("replica fault tests")) as url:
        yield url


@pytest.fixture
async def cluster(
    tmp_path: Path, pg_url: str, sandbox: SlackSandbox, model: FakeModelServer
) -> AsyncIterator[Cluster]:
    c = Cluster(tmp_path, pg_url, sandbox, model)
    try:
        yield c
    finally:
        c.stop_all()


@pytest.fixture
async def sqlite_cluster(
    tmp_path: Path, sandbox: SlackSandbox, model: FakeModelServer
) -> AsyncIterator[Cluster]:
    """One replica process on a SQLite file (never split: SQLite is one process's database)."""
    c = Cluster(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}", sandbox, model)
    c.split = False
    try:
        yield c
    finally:
        c.stop_all()
