"""Outbox and intake fixtures: a real SQLite file and the machine's PostgreSQL (a fresh
database per test), and a real SlackSandbox on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox
from bot.slack.outbox import OutboxDispatcher
from store.db import Database
from store.intake import Intake
from store.migrate import upgrade
from store.outbox import Outbox
from tests.helpers.postgres import fresh_postgres, need_postgres

TOKEN = "xoxb-outbox-tests"
SECRET = "outbox-tests-secret"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}"
        return
    async with fresh_postgres(need_postgres("PostgreSQL outbox tests")) as url:
        yield url


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with fresh_postgres(need_postgres("PostgreSQL outbox tests")) as url:
        yield url


DbFactory = Callable[[str], Awaitable[Database]]


@pytest.fixture
async def make_db() -> AsyncIterator[DbFactory]:
    """A Database on a URL, migrated (several per test: one per replica)."""
    opened: list[Database] = []

    async def make(url: str) -> Database:
        db = Database(url)
        opened.append(db)
        await upgrade(db)
        return db

    yield make
    for db in opened:
        await db.close()


@pytest.fixture
async def db(db_url: str, make_db: DbFactory) -> Database:
    return await make_db(db_url)


@pytest.fixture
def outbox(db: Database) -> Outbox:
    return Outbox(db)


@pytest.fixture
def intake(db: Database) -> Intake:
    return Intake(db)


SandboxFactory = Callable[..., Awaitable[SlackSandbox]]


@pytest.fixture
async def make_sandbox() -> AsyncIterator[SandboxFactory]:
    started: list[SlackSandbox] = []

    async def make(**kwargs: Any) -> SlackSandbox:
        sb = SlackSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN, **kwargs)
        await sb.start("127.0.0.1", 0)
        started.append(sb)
        return sb

    yield make
    for sb in started:
        await sb.stop()


@pytest.fixture
async def sandbox(make_sandbox: SandboxFactory) -> SlackSandbox:
    return await make_sandbox()


DispatcherFactory = Callable[..., Awaitable[OutboxDispatcher]]


@pytest.fixture
async def make_dispatcher() -> AsyncIterator[DispatcherFactory]:
    """Started dispatchers (each with its own Web API client); stopped at the end."""
    running: list[OutboxDispatcher] = []

    async def make(box: Outbox, sb: SlackSandbox, **kwargs: Any) -> OutboxDispatcher:
        client = AsyncWebClient(base_url=sb.api_url, token=TOKEN)
        kwargs.setdefault("sweep_interval", 0.5)
        dispatcher = OutboxDispatcher(box, client, **kwargs)
        await dispatcher.start()
        running.append(dispatcher)
        return dispatcher

    yield make
    for dispatcher in running:
        await dispatcher.stop(grace=0.5)


def with_key(messages: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The messages the outbox posted for `key` (by their metadata)."""
    return [
        m
        for m in messages
        if ((m.get("metadata") or {}).get("event_payload") or {}).get("key") == key
    ]


def all_messages(sb: SlackSandbox) -> list[dict[str, Any]]:
    return [m for channel in sb.ws.history.values() for m in channel]


async def running_run(db: Database, run_id: str = "r1") -> None:
    """A run as its start stores it (`running`, leased), for puts made `while_running`."""
    from store.runs import create_run

    await create_run(
        db,
        owner="a",
        lease_seconds=30,
        run_id=run_id,
        agent_id="ops",
        requester="U1",
        team_id="T1",
        channel_id="C1",
        thread_ts="1.1",
        request_text="deploy",
    )
