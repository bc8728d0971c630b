"""Fixtures for the agent runtime tests.

`backend` runs a test twice: against `FakeModelServer` over real HTTP (the OpenAI provider)
and against the scripted model (see backends.py). `ops` are the four tool kinds, recording
their runs in `ledger` (see ops.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot import Agent, Tool
from bot.testing import FakeModelServer
from tests.agent.backends import FAST, Backend, HttpBackend, MakeAgent, ScriptedBackend
from tests.agent.ops import Ledger, OpsTools


@pytest.fixture
async def server() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer() as s:
        yield s


@pytest.fixture(params=["http", "scripted"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "http":
        async with FakeModelServer() as s:
            b = HttpBackend(s)
            yield b
            await b.model.aclose()  # type: ignore[attr-defined]
            assert s.violations == [], "the agent sent a request a provider would reject"
    else:
        b2 = ScriptedBackend()
        yield b2
        assert b2.violations == [], "the agent sent a request a provider would reject"


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def ops(ledger: Ledger) -> OpsTools:
    return OpsTools(ledger)


@pytest.fixture
def make_agent(backend: Backend) -> MakeAgent:
    def make(tools: list[Tool], **kwargs: Any) -> Agent:
        kwargs.setdefault("model_settings", FAST)
        return Agent(id=kwargs.pop("id", "ops"), model=backend.model, tools=tools, **kwargs)

    return make
