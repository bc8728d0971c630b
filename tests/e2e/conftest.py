"""The `harness` fixture: the real bot between a sandbox Slack and a fake model (see harness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox import SlackSandbox
from bot.testing import FakeModelServer
from tests.e2e.harness import SECRET, TOKEN, Harness


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    model = FakeModelServer()
    await model.start()
    sandbox = SlackSandbox(signing_secret=SECRET, bot_url="http://127.0.0.1:1/", bot_token=TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    h = Harness(tmp_path, sandbox, model)
    await h.start_bot()
    try:
        yield h
    finally:
        await h.stop_bot()
        await sandbox.stop()
        await model.stop()
