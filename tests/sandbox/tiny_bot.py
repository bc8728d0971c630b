"""A tiny signed-request-checking bot for the sandbox tests.

It is NOT sayso: an aiohttp app that verifies Slack signatures with slack_sdk's
SignatureVerifier, records every request, and answers what the test tells it to.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from slack_sdk.signature import SignatureVerifier

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
            await asyncio.sleep(self.delay)  # a slow ack, when a test asks for one
        answer = self.reply(rec)
        status, body = await answer if inspect.isawaitable(answer) else answer
        if body is None:
            return web.Response(status=status)
        if isinstance(body, str):
            return web.Response(status=status, text=body)
        return web.json_response(body, status=status)

    def of_kind(self, kind: str) -> list[Received]:
        return [r for r in self.received if r.kind == kind]
