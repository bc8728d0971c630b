"""Socket Mode: the sandbox as Slack's WebSocket end, for apps run with an app-level token.

`apps.connections.open` (api_socket.py) hands out a one-use `ws://…/sandbox/socket?ticket=…`
URL; the app connects, the sandbox says `hello`, and from then on every delivery goes over the
socket as an envelope instead of an HTTP POST:

    {"envelope_id": "…", "type": "slash_commands" | "interactive" | "events_api",
     "payload": {…the HTTP body as JSON…}, "accepts_response_payload": true | false,
     "retry_attempt": 0, "retry_reason": ""}        # the retry fields on events_api only

The app acks with `{"envelope_id": "…", "payload": {…}}`; that payload is treated exactly like
an HTTP ack body (slash command answers, `response_action`s).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

from bot.sandbox.delivery import HTTP_TIMEOUT, Delivery
from bot.sandbox.state import APP_ID

log = logging.getLogger("sayso.sandbox")

# interactive payload types whose ack may carry a body (response_action, options)
ANSWERING_PAYLOADS = frozenset({"view_submission", "block_suggestion"})


def envelope_for(
    body: str, content_type: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """The Socket Mode envelope carrying what would have been this HTTP request body."""
    headers = headers or {}
    envelope: dict[str, Any] = {"envelope_id": str(uuid.uuid4())}
    if content_type == "application/json":
        envelope.update(type="events_api", payload=json.loads(body))
        envelope["accepts_response_payload"] = False
        envelope["retry_attempt"] = int(headers.get("X-Slack-Retry-Num", "0"))
        envelope["retry_reason"] = headers.get("X-Slack-Retry-Reason", "")
        return envelope
    form = dict(parse_qsl(body, keep_blank_values=True))
    if "payload" in form:
        payload = json.loads(form["payload"])
        envelope.update(type="interactive", payload=payload)
        envelope["accepts_response_payload"] = payload.get("type") in ANSWERING_PAYLOADS
    else:
        envelope.update(type="slash_commands", payload=form, accepts_response_payload=True)
    return envelope


def hello(num_connections: int) -> dict[str, Any]:
    return {
        "type": "hello",
        "num_connections": num_connections,
        "debug_info": {
            "host": "sandbox-socket",
            "build_number": 1,
            "approximate_connection_time": 3600,
        },
        "connection_info": {"app_id": APP_ID},
    }


@dataclass
class _Connection:
    ws: web.WebSocketResponse
    retiring: bool = False  # told to reconnect: new envelopes go elsewhere when possible
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)


class SocketHub:
    """The connected Socket Mode clients, and envelopes sent to them awaiting their acks."""

    def __init__(
        self, app_token: str | None, ack_timeout: float, on_change: Callable[[], None]
    ) -> None:
        self.app_token = app_token
        self.ack_timeout = ack_timeout
        self.envelopes: list[dict[str, Any]] = []  # every envelope sent, oldest first
        self.acks: list[dict[str, Any]] = []  # every ack received, oldest first
        self._on_change = on_change
        self._tickets: set[str] = set()
        self._connections: list[_Connection] = []
        self._turn = 0

    @property
    def connected(self) -> bool:
        """True while at least one Socket Mode client is connected."""
        return any(not c.ws.closed for c in self._connections)

    @property
    def num_connections(self) -> int:
        """Open connections in service (not told to reconnect)."""
        return sum(1 for c in self._connections if not c.ws.closed and not c.retiring)

    def issue_url(self, base_url: str) -> str:
        """A one-use WebSocket URL (what apps.connections.open answers)."""
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        ws_base = "ws" + base_url[len("http") :] if base_url.startswith("http") else base_url
        return f"{ws_base}/sandbox/socket?ticket={ticket}&app_id={APP_ID}"

    async def serve(self, request: web.Request) -> web.StreamResponse:
        """GET /sandbox/socket: a client connects with a ticket from apps.connections.open."""
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid or used ticket")
        self._tickets.discard(ticket)
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        conn = _Connection(ws)
        self._connections.append(conn)
        log.info("event=socket_connected connections=%d", self.num_connections)
        try:
            await ws.send_json(hello(self.num_connections))
            self._on_change()
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_text(conn, message.data)
        finally:
            self._connections.remove(conn)
            for future in conn.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("socket closed before the ack"))
            log.info("event=socket_disconnected connections=%d", self.num_connections)
            self._on_change()
        return ws

    def _on_text(self, conn: _Connection, data: str) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            log.warning("event=socket_bad_message data=%r", data[:200])
            return
        envelope_id = message.get("envelope_id") if isinstance(message, dict) else None
        future = conn.pending.get(envelope_id) if isinstance(envelope_id, str) else None
        if future is None:
            log.warning("event=socket_unexpected_message data=%r", data[:200])
            return
        self.acks.append(message)
        if not future.done():
            future.set_result(message)

    def _next_connection(self) -> _Connection:
        open_ones = [c for c in self._connections if not c.ws.closed]
        open_ones = [c for c in open_ones if not c.retiring] or open_ones
        self._turn += 1
        return open_ones[self._turn % len(open_ones)]

    async def send(
        self,
        kind: str,
        body: str,
        content_type: str,
        extra_headers: dict[str, str] | None = None,
    ) -> Delivery:
        """Send one delivery as an envelope and wait for its ack; never raises for trouble."""
        envelope = envelope_for(body, content_type, extra_headers)
        request = {"envelope": envelope}
        if not self.connected:
            return Delivery(kind, 0, None, 0.0, error="no socket connection", request=request)
        conn = self._next_connection()
        envelope_id = envelope["envelope_id"]
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        conn.pending[envelope_id] = future
        self.envelopes.append(envelope)
        started = time.monotonic()
        try:
            await conn.ws.send_str(json.dumps(envelope, separators=(",", ":")))
            # a late ack (after ack_timeout) is still recognised for a while, as over HTTP
            ack = await asyncio.wait_for(future, min(HTTP_TIMEOUT, 3 * self.ack_timeout))
        except (ConnectionError, RuntimeError, TimeoutError) as exc:
            duration = time.monotonic() - started
            error = f"no ack over the socket: {type(exc).__name__}: {exc}"
            log.warning("event=delivery_failed kind=%s error=%s", kind, error)
            return Delivery(kind, 0, None, duration, error=error, timed_out=True, request=request)
        finally:
            conn.pending.pop(envelope_id, None)
        duration = time.monotonic() - started
        payload = ack.get("payload")
        timed_out = duration > self.ack_timeout
        log.info(
            "event=delivered kind=%s via=socket duration_ms=%d timed_out=%s",
            kind,
            int(duration * 1000),
            timed_out,
        )
        body_out: Any = payload if payload not in (None, {}) else ""
        return Delivery(kind, 200, body_out, duration, timed_out=timed_out, request=request)

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every client to reconnect, as Slack does before it retires a connection."""
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "sandbox"}}
        for conn in list(self._connections):
            if not conn.ws.closed and not conn.retiring:
                conn.retiring = True
                await conn.ws.send_json(message)

    async def close(self) -> None:
        for conn in list(self._connections):
            await conn.ws.close(code=1001, message=b"sandbox stopping")
