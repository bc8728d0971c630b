"""Signed Slack requests built from the sandbox, posted to any replica; reading cards."""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

import aiohttp

from bot.sandbox import SlackSandbox, payloads
from bot.sandbox.delivery import Deliverer

FORM = "application/x-www-form-urlencoded"
SECRET = "fault-signing-secret"
TOKEN = "xoxb-sandbox"
PEOPLE = 100  # U_P000 .. U_P099, full members who may decide


def clicker(i: int) -> str:
    """The i-th of the PEOPLE the fault sandbox adds."""
    return f"U_P{i:03d}"


def sign(secret: str, timestamp: str, body: str | bytes) -> str:
    """X-Slack-Signature exactly as Slack computes it: v0= hex HMAC-SHA256 of v0:{ts}:{body}."""
    raw = body.encode() if isinstance(body, str) else body
    base = b"v0:" + timestamp.encode() + b":" + raw
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    secret: str, body: str | bytes, *, timestamp: str | None = None, content_type: str = FORM
) -> dict[str, str]:
    ts = timestamp or str(int(time.time()))
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(secret, ts, body),
    }


async def post(
    session: aiohttp.ClientSession,
    url: str,
    body: str | bytes,
    headers: dict[str, str],
) -> tuple[int, str]:
    """POST and return (status, text); (0, error) when the connection fails."""
    try:
        async with session.post(url, data=body, headers=headers) as resp:
            return resp.status, await resp.text()
    except (aiohttp.ClientError, TimeoutError) as exc:
        return 0, f"{type(exc).__name__}: {exc}"


def click_payload(
    sandbox: SlackSandbox,
    user: str,
    channel: str,
    message_ts: str,
    action_id: str,
    *,
    value: str | None = None,
) -> dict[str, Any]:
    """The block_actions payload Slack sends when `user` clicks `action_id` on a message
    (built by the sandbox); `value` overrides the button's value."""
    payload = sandbox.click_payload(user, channel, message_ts, action_id)
    if value is not None:
        payload["actions"][0]["value"] = value
    return payload


def submission_payload(
    sandbox: SlackSandbox, user: str, view_id: str, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The view_submission payload for `user` submitting an open modal with `values`."""
    stored = sandbox._view_for(user, view_id)
    view = sandbox._view_with_state(stored, values or {})
    return payloads.view_submission(sandbox.person(user), view, sandbox.issue_trigger(user))


def form_body(payload: dict[str, Any]) -> str:
    """An interactivity request body: `payload=<json>`, form-encoded."""
    return Deliverer.encode_payload(payload)


# -- reading what people see -------------------------------------------------------------


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        el
        for block in message.get("blocks", [])
        if block.get("type") == "actions"
        for el in block.get("elements", [])
    ]


def has_button(message: dict[str, Any], action_id: str) -> bool:
    return any(b.get("action_id") == action_id for b in buttons(message))


def request_id(card: dict[str, Any]) -> str:
    return next(b["value"] for b in buttons(card) if b.get("action_id") == "approve")


def message_text(message: dict[str, Any]) -> str:
    parts = [message.get("text") or ""]
    for block in message.get("blocks", []):
        if isinstance(block.get("text"), str):  # markdown blocks
            parts.append(block["text"])
        for row in block.get("rows", []) or []:  # table blocks
            parts.append(" | ".join(cell.get("text", "") for cell in row))
        if isinstance(block.get("text"), dict):
            parts.append(block["text"].get("text", ""))
        for el in block.get("elements", []) or []:
            if isinstance(el, dict) and isinstance(el.get("text"), str):
                parts.append(el["text"])
            elif isinstance(el, dict) and isinstance(el.get("text"), dict):
                parts.append(el["text"].get("text", ""))
    return "\n".join(parts)


def thread(sandbox: SlackSandbox, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
    roots = sandbox.messages(channel)
    return sandbox.thread(channel, roots[-1]["ts"]) if roots else []


def cards(sandbox: SlackSandbox, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
    """Messages in the latest run's thread that still have an Approve button."""
    return [m for m in thread(sandbox, channel) if has_button(m, "approve")]


def thread_text(sandbox: SlackSandbox, channel: str = "C_GENERAL") -> str:
    final = [m for m in thread(sandbox, channel) if "markdown_text" not in m]  # not streaming
    return "\n".join(message_text(m) for m in final)


def ephemeral_texts(sandbox: SlackSandbox, user: str) -> list[str]:
    return [message_text(e) for e in sandbox.ephemerals(user)]
