"""GET /metrics (on the front's port, or a worker's `--metrics-port`), the timer of the acks
Slack waits for, and the Slack Web API errors counted from a client's responses."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bot.ops.metrics import ack, pending, render, slack_api_error, slack_ratelimited

# -- HTTP: GET /metrics, the ack timer, the standalone server ---------------------------------


async def metrics_handler(request: web.Request) -> web.Response:
    await pending.refresh()
    response = web.Response(body=render())
    response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    response.charset = "utf-8"
    return response


def request_type(body: bytes, content_type: str) -> str:
    """command, block_actions, view_submission, event_callback, ...: a bounded label."""
    if content_type.startswith("application/json"):
        try:
            kind = json.loads(body).get("type")
        except (ValueError, AttributeError):
            return "malformed"
        return kind if kind in _KNOWN else "other"
    form = parse_qs(body.decode("utf-8", "replace"))
    if "command" in form:
        return "command"
    if "payload" in form:
        try:
            kind = json.loads(form["payload"][0]).get("type")
        except (ValueError, AttributeError):
            return "malformed"
        return kind if kind in _KNOWN else "other"
    return "other"


_KNOWN = frozenset(
    {
        "block_actions",
        "view_submission",
        "view_closed",
        "shortcut",
        "message_action",
        "block_suggestion",
        "event_callback",
        "url_verification",
    }
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def ack_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Time each `POST /slack/events` answer (the ack Slack waits for), by request type."""
    if request.method != "POST" or request.path != "/slack/events":
        return await handler(request)
    from bot.ops import tracing

    started = time.perf_counter()
    body = await request.read()  # cached: the handler reads it again for free
    kind = request_type(body, request.content_type or "")
    try:
        async with tracing.span(f"slack.ack {kind}", kind="SERVER", request_type=kind):
            return await handler(request)
    finally:
        ack(kind, time.perf_counter() - started)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/metrics", metrics_handler)


async def serve_metrics(host: str, port: int) -> web.AppRunner:
    """`sayso worker --metrics-port`: GET /metrics on its own port (stop with `.cleanup()`)."""
    app = web.Application()
    add_routes(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


# -- Slack Web API errors: counted from the client's responses --------------------------------


class _SlackErrorCounter(AsyncRetryHandler):
    """A retry handler that never retries: it counts each `ok: false` answer (and each failed
    connection) by method and error, for every call of the client it is put on."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        method = request.url.rstrip("/").rsplit("/", 1)[-1].split("?")[0]
        if error is not None:
            slack_api_error(method, type(error).__name__)
        elif response is not None:
            body = response.body if isinstance(response.body, dict) else {}
            if response.status_code == 429:
                slack_api_error(method, "ratelimited")
                slack_ratelimited(method)
            elif body.get("ok") is False:
                slack_api_error(method, str(body.get("error") or "unknown"))
        return False


def count_slack_errors(client: Any) -> None:
    """Count the Slack API errors of this client (an AsyncWebClient; idempotent)."""
    handlers = client.retry_handlers
    if not any(isinstance(h, _SlackErrorCounter) for h in handlers):
        handlers.insert(0, _SlackErrorCounter())
