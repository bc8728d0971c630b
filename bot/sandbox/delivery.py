"""Signed HTTP requests from the sandbox to the bot, exactly as Slack signs them."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp

log = logging.getLogger("sayso.sandbox")

ACK_TIMEOUT = 3.0  # Slack gives up on an ack after 3 s
HTTP_TIMEOUT = 10.0


def sign(signing_secret: str, timestamp: str, body: str) -> str:
    """X-Slack-Signature for a body: "v0=" + hex HMAC-SHA256 of "v0:{ts}:{body}"."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass
class Delivery:
    """What the bot answered to one delivery, plus what the sandbox learned from it.

    `status` is the bot's HTTP status (0 when the request failed: no bot, connection refused,
    timeout). `body` is the parsed JSON answer, the text answer, or "" for an empty ack.
    `timed_out` is true when the ack took longer than Slack's 3 s: Slack would have shown an
    error and ignored the body, and so does the sandbox.
    """

    kind: str
    status: int
    body: Any
    duration: float
    event_id: str | None = None
    ts: str | None = None
    trigger_id: str | None = None
    view_id: str | None = None
    timed_out: bool = False
    error: str | None = None
    request: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300 and not self.timed_out

    def summary(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "status": self.status,
            "body": self.body,
            "duration": round(self.duration, 4),
            "timed_out": self.timed_out,
            "error": self.error,
            "ts": self.ts,
        }


class Deliverer:
    """Sends signed requests to `bot_url` with one shared aiohttp session."""

    def __init__(self, signing_secret: str, ack_timeout: float = ACK_TIMEOUT) -> None:
        self.signing_secret = signing_secret
        self.ack_timeout = ack_timeout
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=HTTP_TIMEOUT)
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    @staticmethod
    def encode_form(fields: dict[str, str]) -> str:
        return urlencode(fields)

    @staticmethod
    def encode_payload(payload: dict[str, Any]) -> str:
        """Interactivity requests: form field `payload` holding the JSON."""
        return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})

    async def send(
        self,
        bot_url: str | None,
        kind: str,
        body: str,
        content_type: str,
        extra_headers: dict[str, str] | None = None,
    ) -> Delivery:
        """POST `body` to the bot, signed; never raises for network trouble."""
        request = {"body": body, "content_type": content_type, "headers": extra_headers or {}}
        if not bot_url:
            log.warning("event=delivery_failed kind=%s error=no_bot_url", kind)
            return Delivery(kind, 0, None, 0.0, error="no bot_url set", request=request)
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": sign(self.signing_secret, timestamp, body),
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            **(extra_headers or {}),
        }
        started = time.monotonic()
        try:
            async with self._client().post(bot_url, data=body.encode(), headers=headers) as resp:
                raw = await resp.text()
                status = resp.status
                resp_type = resp.headers.get("Content-Type", "")
        except (aiohttp.ClientError, TimeoutError) as exc:
            duration = time.monotonic() - started
            error = f"{type(exc).__name__}: {exc}"
            log.warning("event=delivery_failed kind=%s error=%s", kind, error)
            return Delivery(kind, 0, None, duration, error=error, timed_out=True, request=request)
        duration = time.monotonic() - started
        parsed: Any = raw
        if raw and ("json" in resp_type or raw.lstrip().startswith(("{", "["))):
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = raw
        timed_out = duration > self.ack_timeout
        log.info(
            "event=delivered kind=%s status=%d duration_ms=%d timed_out=%s",
            kind,
            status,
            int(duration * 1000),
            timed_out,
        )
        return Delivery(kind, status, parsed, duration, timed_out=timed_out, request=request)
