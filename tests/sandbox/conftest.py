"""Fixtures: a running sandbox, a Web API client on it, a tiny signed-request-checking bot,
and Block Kit builders (`kit`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox
from tests.sandbox.kit import button, card_blocks, modal
from tests.sandbox.tiny_bot import SECRET, TOKEN, TinyBot


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    sb = SlackSandbox(signing_secret=SECRET, bot_token=TOKEN)
    await sb.start(host="127.0.0.1", port=0)
    try:
        yield sb
    finally:
        await sb.stop()


@pytest.fixture
async def tiny_bot(sandbox: SlackSandbox) -> AsyncIterator[TinyBot]:
    bot = TinyBot(SECRET)
    await bot.start()
    sandbox.bot_url = bot.url  # the bot starts after the sandbox, as in real tests
    try:
        yield bot
    finally:
        await bot.stop()


@pytest.fixture
def client(sandbox: SlackSandbox) -> AsyncWebClient:
    return AsyncWebClient(base_url=sandbox.api_url, token=TOKEN)


@pytest.fixture
def kit() -> SimpleNamespace:
    """Block Kit builders for tests: kit.button(...), kit.card_blocks(), kit.modal(...)."""
    return SimpleNamespace(button=button, card_blocks=card_blocks, modal=modal)
