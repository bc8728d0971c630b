"""The sandbox's shared core: workspace data, trigger ids, response URLs and the record of calls.

`SlackSandbox` (server.py) builds on this with the HTTP server; the web API (webapi.py) and
the person actions (actions.py) read and write through it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from bot.sandbox import payloads
from bot.sandbox.delivery import ACK_TIMEOUT, Deliverer, Delivery
from bot.sandbox.limits import Outage, SlackLimits
from bot.sandbox.socket_mode import SocketHub
from bot.sandbox.state import (
    Person,
    UserGroup,
    Workspace,
    default_groups,
    default_people,
    new_id,
    new_trigger_id,
)

log = logging.getLogger("sayso.sandbox")

TRIGGER_TTL = 3.0
RESPONSE_URL_USES = 5
RESPONSE_URL_TTL = 30 * 60.0


@dataclass
class ApiCall:
    """One Web API call the bot made: method name, arguments (token removed), our answer, and
    the connection it came on (the bot's `host:port`: calls on one kept-alive connection share
    it)."""

    method: str
    args: dict[str, Any]
    response: dict[str, Any]
    connection: str = ""


@dataclass
class Trigger:
    user: str
    issued: float
    used: bool = False


@dataclass
class ResponseUrl:
    """Where a response_url posts: the channel, the person, and the message it came from."""

    channel: str
    user: str
    message_ts: str | None = None
    is_ephemeral: bool = False
    thread_ts: str | None = None
    uses: int = 0
    created: float = field(default_factory=time.monotonic)


@dataclass
class Failure:
    """An injected Web API failure (see `SandboxCore.fail_next`)."""

    method: str
    error: str
    status: int
    retry_after: int | None
    remaining: int


GRANTED_SCOPES = (
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:read",
    "chat:write",
    "commands",
    "groups:history",
    "groups:read",
    "im:history",
    "im:write",
    "usergroups:read",
    "users:read",
)
"""The bot scopes of manifest.yml: what auth.test says the sandbox's token has."""


class SandboxCore:
    """State and bookkeeping shared by the web API, the deliveries and the page."""

    def __init__(
        self,
        signing_secret: str,
        bot_url: str | None = None,
        bot_token: str = "xoxb-sandbox",
        *,
        people: list[Person] | None = None,
        groups: list[UserGroup] | None = None,
        deliver_bot_messages: bool = False,
        ack_timeout: float = ACK_TIMEOUT,
        trigger_ttl: float = TRIGGER_TTL,
        app_token: str | None = None,
        rate_limits: bool = False,
    ) -> None:
        self.signing_secret = signing_secret
        self.bot_url = bot_url
        self.bot_token = bot_token
        self.deliver_bot_messages = deliver_bot_messages
        self.refuse_streaming = False  # True: chat.startStream fails, as if not allowed
        self.scopes: list[str] = list(GRANTED_SCOPES)
        """What auth.test's `x-oauth-scopes` header says the token has (a test drops one)."""
        self.trigger_ttl = trigger_ttl
        self.ws = Workspace(
            default_people() if people is None else people,
            default_groups() if groups is None else groups,
        )
        self.calls: list[ApiCall] = []
        self.deliveries: list[Delivery] = []
        self.url = ""
        self._deliverer = Deliverer(signing_secret, ack_timeout)
        self._triggers: dict[str, Trigger] = {}
        self._response_urls: dict[str, ResponseUrl] = {}
        self._events: dict[str, str] = {}  # event_id -> JSON body, for redeliver
        self._failures: list[Failure] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._version = 0
        self._changed = asyncio.Event()
        self.socket = SocketHub(app_token, ack_timeout, on_change=self.changed)
        # Slack's rate limits (off unless rate_limits=True) and their counters; outages
        self.limits = SlackLimits(enabled=rate_limits)
        self.down = Outage()
        self._slow: dict[str, list[float]] = {}

    # URLs ------------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        """Base URL for slack_sdk's AsyncWebClient(base_url=...)."""
        return f"{self.url}/api/"

    # change notification (for wait_for and the page's live updates) ----------------------
    def changed(self) -> None:
        self._version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_changed(self, version: int, within: float) -> int:
        """Wait until the state version moves past `version` (or the timeout); return it."""
        if self._version == version:
            event = self._changed
            try:
                await asyncio.wait_for(event.wait(), within)
            except TimeoutError:
                pass
        return self._version

    # people ----------------------------------------------------------------------------
    def person(self, user: str) -> Person:
        try:
            return self.ws.people[user]
        except KeyError:
            known = ", ".join(sorted(self.ws.people))
            raise KeyError(f"no person {user!r} in the sandbox (known: {known})") from None

    # trigger ids -----------------------------------------------------------------------
    def issue_trigger(self, user: str) -> str:
        trigger_id = new_trigger_id()
        self._triggers[trigger_id] = Trigger(user=user, issued=time.monotonic())
        return trigger_id

    def use_trigger(self, trigger_id: Any) -> tuple[str | None, str | None]:
        """(user, None) for a fresh trigger, else (None, Slack error code)."""
        trigger = self._triggers.get(trigger_id) if isinstance(trigger_id, str) else None
        if trigger is None:
            return None, "invalid_trigger_id"
        if time.monotonic() - trigger.issued > self.trigger_ttl:
            return None, "expired_trigger_id"
        if trigger.used:
            return None, "trigger_exchanged"
        trigger.used = True
        return trigger.user, None

    # response URLs ---------------------------------------------------------------------
    def issue_response_url(self, target: ResponseUrl) -> str:
        key = new_id("R", 16)
        self._response_urls[key] = target
        return f"{self.url}/sandbox/response/{key}"

    def response_target(self, key: str) -> tuple[ResponseUrl | None, str | None]:
        target = self._response_urls.get(key)
        if target is None:
            return None, "invalid_url"
        if time.monotonic() - target.created > RESPONSE_URL_TTL:
            return None, "expired_url"
        if target.uses >= RESPONSE_URL_USES:
            return None, "used_url"
        target.uses += 1
        return target, None

    # failure injection -----------------------------------------------------------------
    def fail_next(
        self,
        method: str,
        error: str = "ratelimited",
        *,
        status: int | None = None,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        """Make the next `times` calls of `method` fail with `error`.

        `ratelimited` answers HTTP 429 with Retry-After (default 1 s), as Slack does.
        """
        if error == "ratelimited":
            status = status or 429
            retry_after = 1 if retry_after is None else retry_after
        self._failures.append(Failure(method, error, status or 200, retry_after, times))

    def slow_next(self, method: str, seconds: float, *, times: int = 1) -> None:
        """The next `times` calls of `method` take effect at once but are answered only after
        `seconds`: a caller that gives up (or dies) meanwhile does not know they happened."""
        self._slow.setdefault(method, []).extend([seconds] * times)

    def take_slowness(self, method: str) -> float:
        delays = self._slow.get(method)
        return delays.pop(0) if delays else 0.0

    def clear_failures(self, method: str | None = None) -> None:
        """Stop the injected failures of `method` (of every method when None)."""
        self._failures = [f for f in self._failures if method not in (None, f.method)]

    def take_failure(self, method: str) -> Failure | None:
        for failure in self._failures:
            if failure.method == method and failure.remaining > 0:
                failure.remaining -= 1
                if failure.remaining == 0:
                    self._failures.remove(failure)
                return failure
        return None

    # background work -------------------------------------------------------------------
    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def record_delivery(self, delivery: Delivery) -> Delivery:
        self.deliveries.append(delivery)
        self.changed()
        return delivery

    # deliveries ------------------------------------------------------------------------
    async def _send(
        self, kind: str, body: str, content_type: str, headers: dict[str, str] | None = None
    ) -> Delivery:
        """Over the Socket Mode connection when an app is connected, else HTTP to bot_url."""
        if self.socket.connected:
            return await self.socket.send(kind, body, content_type, headers)
        return await self._deliverer.send(self.bot_url, kind, body, content_type, headers)

    async def send_event(self, event: dict[str, Any]) -> Delivery:
        """Deliver one Events API event_callback (JSON) and remember it for redeliver."""
        envelope = payloads.event_callback(event)
        body = json.dumps(envelope, separators=(",", ":"))
        self._events[envelope["event_id"]] = body
        delivery = await self._send(f"event:{event['type']}", body, "application/json")
        delivery.event_id = envelope["event_id"]
        return self.record_delivery(delivery)

    async def redeliver(
        self, event_id: str, retry_num: int = 1, reason: str = "http_timeout"
    ) -> Delivery:
        """Send an event again, byte for byte, with Slack's retry headers."""
        body = self._events.get(event_id)
        if body is None:
            raise KeyError(f"no event {event_id!r} was delivered by this sandbox")
        headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": reason}
        kind = f"event:{json.loads(body)['event']['type']}:retry"
        delivery = await self._send(kind, body, "application/json", headers)
        delivery.event_id = event_id
        return self.record_delivery(delivery)

    async def send_payload(self, kind: str, payload: dict[str, Any]) -> Delivery:
        """Deliver an interactivity payload (form field `payload=` holding JSON)."""
        body = self._deliverer.encode_payload(payload)
        content_type = "application/x-www-form-urlencoded"
        return await self._send(kind, body, content_type)

    async def send_form(self, kind: str, fields: dict[str, str]) -> Delivery:
        """Deliver a form-encoded request (slash commands)."""
        body = self._deliverer.encode_form(fields)
        content_type = "application/x-www-form-urlencoded"
        return await self._send(kind, body, content_type)
