"""The real bot between a SlackSandbox that speaks Slack's limits and outages and a fake model
that answers every run with `deploy` then text; SQLite file and the machine's PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from bot.sandbox import SlackSandbox
from bot.sandbox.state import Person, default_people
from bot.testing import FakeModelServer
from bot.testing.model_scripts import build_script
from tests.e2e.flows import DEPLOY
from tests.e2e.harness import SECRET, TOKEN, Harness
from tests.helpers.postgres import fresh_postgres, need_postgres

MORE_PEOPLE = [Person("U_ASKER5", "Kai", "Kai Five"), Person("U_ASKER6", "Lou", "Lou Six")]

Durable = Callable[..., AbstractAsyncContextManager[Harness]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}"
        return
    async with fresh_postgres(need_postgres("PostgreSQL durable tests")) as url:
        yield url


@pytest.fixture
def durable(tmp_path: Path, db_url: str) -> Durable:
    """`async with durable(rate_limits=...) as h`: the harness, started."""

    @asynccontextmanager
    async def running(*, rate_limits: bool = False) -> AsyncIterator[Harness]:
        model = FakeModelServer()
        model.responder = build_script(
            "tool-then-text", tool="deploy", arguments=json.dumps(DEPLOY)
        )
        await model.start()
        sandbox = SlackSandbox(
            signing_secret=SECRET,
            bot_url="http://127.0.0.1:1/",
            bot_token=TOKEN,
            rate_limits=rate_limits,
            people=[*default_people(), *MORE_PEOPLE],
        )
        await sandbox.start(host="127.0.0.1", port=0)
        h = Harness(tmp_path, sandbox, model, db_url)
        h.settings_overrides["sayso_rate_limit"] = "off"
        h.settings_overrides["sayso_lease_seconds"] = 30  # as deployed (e2e: 3 s, for recovery)
        try:
            await h.start_bot()
            yield h
        finally:
            await h.stop_bot()
            await sandbox.stop()
            await model.stop()

    return running
