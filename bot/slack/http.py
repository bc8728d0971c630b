"""Slack's HTTP requests, checked before Bolt sees them: a body Slack would never send is
answered 400 here, since Bolt would raise on it and answer 500."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from slack_bolt.request.async_request import AsyncBoltRequest

log = logging.getLogger("sayso.slack")

MAX_BODY_BYTES = 1024 * 1024  # Slack's payloads are far smaller; bigger bodies get 413

_CHARSETS = ("utf-8", "utf8", "us-ascii", "ascii")
"""Slack sends UTF-8; a body declared in any other charset is not Slack's."""


async def bolt_request(request: web.Request) -> AsyncBoltRequest | None:
    """The request for Bolt, or None when Slack would never send it (a body that is not UTF-8,
    a timestamp that is not a number, a body that is not a JSON object, fields of the wrong
    type): Bolt would raise on those and answer 500."""
    raw = await request.read()  # bodies over MAX_BODY_BYTES get 413 here
    reason = _undecodable(request, raw)
    bolt_request: AsyncBoltRequest | None = None
    if reason is None:
        try:
            int(request.headers.get("X-Slack-Request-Timestamp", "0"))
            bolt_request = AsyncBoltRequest(
                body=raw.decode("utf-8"),
                query=request.query_string,
                headers=request.headers,  # type: ignore[arg-type]
            )
        except (ValueError, TypeError, AttributeError, LookupError):
            reason = "unparsable"
    if reason is None and (bolt_request is None or not _slack_shaped(bolt_request.body)):
        reason = "shape"
    if reason is not None:
        log.info("event=malformed_request reason=%s bytes=%d", reason, len(raw))
        return None
    return bolt_request


def _undecodable(request: web.Request, raw: bytes) -> str | None:
    """Why the body cannot be Slack's text (a charset other than UTF-8, bytes that are not
    UTF-8), or None."""
    try:
        charset = (request.charset or "utf-8").lower()
    except (ValueError, LookupError):
        return "charset"
    if charset not in _CHARSETS:
        return "charset"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not_utf8"
    return None


_OBJECT_FIELDS = ("user", "view", "container", "message", "event", "state")
_VIEW_PAYLOADS = ("view_submission", "view_closed")


def _slack_shaped(body: Any) -> bool:
    """Slack's top-level fields have fixed JSON types, which Bolt relies on (it raises
    otherwise): an object, a string `type`, objects where Slack sends objects, a view with
    its `type`, actions with their `action_id`."""
    if not isinstance(body, dict) or not isinstance(body.get("type", ""), str):
        return False
    if any(k in body and not isinstance(body[k], dict) for k in _OBJECT_FIELDS):
        return False
    if any(body.get(k) is not None and not isinstance(body[k], dict) for k in ("team", "channel")):
        return False
    if not _strings(body.get("user", {}), "id") or not _strings(body, "callback_id"):
        return False
    view = body.get("view")
    if view is not None:
        if body.get("type") in _VIEW_PAYLOADS and not isinstance(view.get("type"), str):
            return False
        if not _strings(view, "type", "id", "callback_id", "private_metadata", "external_id"):
            return False
    actions = body.get("actions", [])
    return isinstance(actions, list) and all(
        isinstance(a, dict) and isinstance(a.get("action_id"), str) and _strings(a, "block_id")
        for a in actions
    )


def _strings(value: dict[str, Any], *keys: str) -> bool:
    """Are these keys, where present, strings?"""
    return all(value.get(k) is None or isinstance(value[k], str) for k in keys)
