"""Fixtures: a running sandbox, a Web API client on it, and a tiny signed-request-checking bot.

The tiny bot is NOT sayso: it is an aiohttp app that verifies Slack signatures with
slack_sdk's SignatureVerifier, records every request, and answers what the test tells it to.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox

SECRET = "sandbox-test-signing-secret"
TOKEN = "xoxb-sandbox-test"


@dataclass
class Received:
    headers: dict[str, str]
    raw: str
    signature_ok: bool
    form: dict[str, str] = field(default_factory=dict)
    payload: dict[str, Any] | None = None
    event: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        if self.payload is not None:
            return self.payload["type"]
        if self.event is not None:
            return self.event["event"]["type"]
        return "slash_command" if "command" in self.form else "unknown"


Reply = Callable[[Received], Any]  # -> (status, body), or an awaitable of it


class TinyBot:
    """Records signed requests; `reply(received) -> (status, body)` decides the answer.

    `reply` may be async (to call the sandbox's Web API before acking); `delay` slows acks.
    """

    def __init__(self, secret: str) -> None:
        self.verifier = SignatureVerifier(secret)
        self.received: list[Received] = []
        self.reply: Reply = lambda r: (200, None)
        self.url = ""
        self.delay = 0.0
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/slack/events", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/slack/events"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.text()
        ok = self.verifier.is_valid_request(raw, dict(request.headers))
        rec = Received(dict(request.headers), raw, ok)
        if request.content_type == "application/json":
            rec.event = json.loads(raw)
        else:
            rec.form = {k: v[0] for k, v in parse_qs(raw).items()}
            if "payload" in rec.form:
                rec.payload = json.loads(rec.form["payload"])
        self.received.append(rec)
        if not ok:
            return web.Response(status=401, text="invalid signature")
        if self.delay:
            await asyncio.sleep(self.delay)
        answer = self.reply(rec)
        status, body = await answer if inspect.isawaitable(answer) else answer
        if body is None:
            return web.Response(status=status)
        if isinstance(body, str):
            return web.Response(status=status, text=body)
        return web.json_response(body, status=status)

    def of_kind(self, kind: str) -> list[Received]:
        return [r for r in self.received if r.kind == kind]


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


def button(action_id: str, text: str, value: str, style: str | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text},
        "value": value,
    }
    if style:
        element["style"] = style
    return element


def card_blocks() -> list[dict[str, Any]]:
    """An approval card like sayso's: header, section with fields, context, buttons."""
    return [
        {"type": "header", "text": {"type": "plain_text", "text": "Approval needed"}},
        {
            "type": "section",
            "block_id": "call",
            "text": {"type": "mrkdwn", "text": "*deploy* wants to run `kubectl apply`"},
            "fields": [{"type": "mrkdwn", "text": "*Env*\nstaging"}],
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "asked by <@U_REQUESTER>"}]},
        {"type": "divider"},
        {
            "type": "actions",
            "block_id": "decision",
            "elements": [
                button("approve", "Approve", "call-1", "primary"),
                button("reject", "Reject", "call-1", "danger"),
            ],
        },
    ]


def modal(title: str = "Edit the call", **extra: Any) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "edit_call",
        "title": {"type": "plain_text", "text": title},
        "submit": {"type": "plain_text", "text": "Save"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "private_metadata": json.dumps({"call_id": "call-1"}),
        "blocks": [
            {
                "type": "input",
                "block_id": "reason",
                "label": {"type": "plain_text", "text": "Reason"},
                "element": {"type": "plain_text_input", "action_id": "text", "multiline": True},
            },
            {
                "type": "input",
                "block_id": "env",
                "optional": True,
                "label": {"type": "plain_text", "text": "Environment"},
                "element": {
                    "type": "static_select",
                    "action_id": "pick",
                    "options": [
                        {"text": {"type": "plain_text", "text": n}, "value": n}
                        for n in ("staging", "production")
                    ],
                },
            },
        ],
        **extra,
    }


@pytest.fixture
def kit() -> SimpleNamespace:
    """Block Kit builders for tests: kit.button(...), kit.card_blocks(), kit.modal(...)."""
    return SimpleNamespace(button=button, card_blocks=card_blocks, modal=modal)
