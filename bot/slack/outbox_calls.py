"""The Web API calls of the outbox dispatcher, and what each failure means for a retry.

`classify` decides whether Slack certainly did nothing (a 429, an error answer, a 503, a
refused connection: `maybe_sent=False`) or may have acted (a timeout, a torn connection, a
5xx other than 503, `internal_error`/`fatal_error`: `maybe_sent=True`, the row stays unsure).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from store.outbox import OutboxRow

if TYPE_CHECKING:
    from bot.slack.outbox import OutboxStats

EVENT_TYPE = "sayso_outbox"
MESSAGE_FIELDS = (
    "text",
    "blocks",
    "attachments",
    "unfurl_links",
    "unfurl_media",
    "mrkdwn",
    "icon_emoji",
    "username",
    "reply_broadcast",
)
STREAM_ONLY = ("markdown_text", "final", "recipient_team_id", "recipient_user_id")
AUTH_ERRORS = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}
MAYBE_DONE = {"internal_error", "fatal_error"}  # Slack: "some aspect may have succeeded"
TRANSIENT = {"request_timeout", "service_unavailable", "ratelimited", "team_added_to_org"}


class CallFailure(Exception):
    """A failed call: `kind` is ratelimited | down | transient | unsure | permanent."""

    def __init__(
        self, kind: str, error: str, *, maybe_sent: bool = False, retry_after: float = 1.0
    ) -> None:
        super().__init__(f"{kind}: {error}")
        self.kind = kind
        self.error = error
        self.maybe_sent = maybe_sent
        self.retry_after = retry_after


def classify(exc: BaseException, method: str) -> CallFailure:
    if isinstance(exc, SlackApiError):
        return _api_error(exc)
    if isinstance(exc, aiohttp.ClientConnectorError):  # refused, DNS, unreachable: not sent
        return CallFailure("down", f"connect: {exc.os_error!r}")
    if isinstance(exc, aiohttp.ClientResponseError):  # a response_url's HTTP error
        if exc.status == 429:
            return CallFailure("ratelimited", "ratelimited", retry_after=1.0)
        return CallFailure("down", f"http {exc.status}", maybe_sent=exc.status != 503)
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return CallFailure("unsure", "timeout", maybe_sent=True)
    return CallFailure("unsure", f"{type(exc).__name__}: {exc}", maybe_sent=True)


def _api_error(exc: SlackApiError) -> CallFailure:
    response = exc.response  # an AsyncSlackResponse, or aiohttp's for an unreadable body
    status = int(getattr(response, "status_code", None) or getattr(response, "status", 0) or 200)
    data = getattr(response, "data", None)
    data = data if isinstance(data, dict) else {}
    error = str(data.get("error") or f"http {status}")
    if status == 429 or error == "ratelimited":
        headers = getattr(response, "headers", {}) or {}
        retry = headers.get("Retry-After") or headers.get("retry-after") or 1
        try:
            seconds = max(1.0, float(retry))
        except (TypeError, ValueError):
            seconds = 1.0
        return CallFailure("ratelimited", "ratelimited", retry_after=seconds)
    if status == 503:
        return CallFailure("down", error)
    if status >= 500:
        return CallFailure("down", error, maybe_sent=True)
    if error in MAYBE_DONE:
        return CallFailure("unsure", error, maybe_sent=True)
    if error in AUTH_ERRORS:
        return CallFailure("transient", error)  # a fixed token brings the rows back
    if error in TRANSIENT:
        return CallFailure("transient", error)
    return CallFailure("permanent", error)


UNSEEN_EPHEMERAL = ("user_not_in_channel", "channel_not_found", "not_in_channel", "is_archived")
"""`chat.postEphemeral` errors that mean the person cannot see it there: a DM says it instead."""


def metadata(row: OutboxRow) -> dict[str, Any]:
    """The message's metadata: the caller's event_payload fields plus the key and version."""
    own = row.payload.get("metadata") or {}
    body = dict(own.get("event_payload") or {}) if isinstance(own, dict) else {}
    body.update(key=row.key, version=row.version)
    return {"event_type": EVENT_TYPE, "event_payload": body}


def message_args(row: OutboxRow) -> dict[str, Any]:
    args = {k: row.payload[k] for k in MESSAGE_FIELDS if k in row.payload}
    if row.kind == "stream" and "text" not in args:
        args["text"] = str(row.payload.get("markdown_text") or "")
    return args


class Calls:
    """Builds each method's arguments from a row and makes the call, every call on one HTTP
    session (made on the dispatcher's loop at its first call). Without one, slack-sdk opens a
    session, and a connection, per call: a TCP connect and a session's set-up for every post,
    update and publish."""

    def __init__(self, client: AsyncWebClient, timeout: float, stats: OutboxStats) -> None:
        self.client = client
        self.timeout = timeout
        self.stats = stats
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
            self.client.session = self._session
        return self._session

    async def call(self, row: OutboxRow, method: str, **extra: Any) -> dict[str, Any]:
        self.stats.calls[method] += 1
        self._http()
        if method == "response_url":
            return await self._response_url(row)
        args = self._args(row, method, extra)
        method = "chat.postMessage" if method == "dm" else method
        if method.startswith("conversations."):  # read methods take form or query arguments
            answer = await self.client.api_call(method, http_verb="GET", params=args)
        else:
            answer = await self.client.api_call(method, json=args)
        return dict(answer.data) if isinstance(answer.data, dict) else {}

    def _args(self, row: OutboxRow, method: str, extra: dict[str, Any]) -> dict[str, Any]:
        channel = {"channel": row.channel}
        if method == "chat.postMessage":
            args = {**channel, **message_args(row), "metadata": metadata(row)}
            if row.thread_ts:
                args["thread_ts"] = row.thread_ts
            return args
        if method == "chat.update":
            return {**channel, "ts": extra["ts"], **message_args(row), "metadata": metadata(row)}
        if method == "chat.delete":
            return {**channel, "ts": extra["ts"]}
        if method == "views.publish":
            return {"user_id": row.user_id, "view": row.payload["view"]}
        if method == "chat.postEphemeral":
            args = {**channel, "user": row.user_id, **message_args(row)}
            if row.thread_ts:
                args["thread_ts"] = row.thread_ts
            return args
        if method == "dm":  # an ephemeral its person cannot see there: a DM instead
            return {"channel": row.user_id, **message_args(row), "metadata": metadata(row)}
        if method in ("conversations.replies", "conversations.history"):
            args = {**channel, "include_all_metadata": "true", "limit": 200}
            args["oldest"] = f"{extra['oldest']:.6f}"
            if method == "conversations.replies":
                args["ts"] = row.thread_ts
            if extra.get("cursor"):
                args["cursor"] = extra["cursor"]
            return args
        return self._stream_args(row, method, extra)

    @staticmethod
    def _stream_args(row: OutboxRow, method: str, extra: dict[str, Any]) -> dict[str, Any]:
        channel = {"channel": row.channel}
        if method == "chat.startStream":
            args = {**channel, "thread_ts": row.thread_ts, "markdown_text": extra["text"]}
            for name in ("recipient_team_id", "recipient_user_id"):
                if row.payload.get(name):
                    args[name] = row.payload[name]
            return args
        if method == "chat.appendStream":
            return {**channel, "ts": extra["ts"], "markdown_text": extra["text"]}
        if method == "chat.stopStream":  # its blocks would be shown below the text: none
            return {**channel, "ts": extra["ts"]}
        raise ValueError(f"the outbox does not send {method}")

    async def _response_url(self, row: OutboxRow) -> dict[str, Any]:
        body = {k: v for k, v in row.payload.items() if k != "response_url"}
        async with self._http().post(str(row.payload["response_url"]), json=body) as resp:
            text = await resp.text()
            if resp.status == 429 or resp.status >= 500:
                resp.raise_for_status()
            if resp.status >= 400:  # used up, expired or unknown: it will never work
                raise CallFailure("permanent", f"response_url {resp.status}: {text[:100]}")
        return {"ok": True}
