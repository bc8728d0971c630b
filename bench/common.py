"""Shared by the benchmark scripts: ports, Slack signing, the payloads Slack sends."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
import uuid
from typing import Any
from urllib.parse import urlencode

SECRET = "bench-signing-secret"
TOKEN = "xoxb-sandbox"  # the sandbox's bot token
TEAM_ID = "T_SANDBOX"
APP_ID = "A_SAYSO"
REQUESTER = "U_REQUESTER"
APPROVER = "U_APPROVER"
PEOPLE = [f"U_PERSON{i:02d}" for i in range(40)]  # extra members of the fake workspace
FORM = "application/x-www-form-urlencoded"


def signed_headers(body: str, secret: str = SECRET) -> dict[str, str]:
    """X-Slack-Signature exactly as Slack computes it (v0 HMAC-SHA256 of v0:ts:body)."""
    ts = str(int(time.time()))
    base = f"v0:{ts}:{body}".encode()
    sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sig,
        "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
    }


def slash_body(text: str, channel: str, response_url: str, user: str = REQUESTER) -> str:
    return urlencode(
        {
            "token": "bench",
            "team_id": TEAM_ID,
            "team_domain": "sandbox",
            "channel_id": channel,
            "channel_name": channel.lower(),
            "user_id": user,
            "user_name": user.lower(),
            "command": "/sayso",
            "text": text,
            "api_app_id": APP_ID,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:12]}",
        }
    )


def approve_body(
    request_id: str, channel: str, message_ts: str, response_url: str, user: str = APPROVER
) -> str:
    """A block_actions payload for a click on a card's Approve button."""
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "bench",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "trigger_id": f"{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:12]}",
        "team": {"id": TEAM_ID, "domain": "sandbox"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": channel.lower()},
        "message": {"type": "message", "ts": message_ts, "text": "card", "blocks": []},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "action_id": "approve",
                "block_id": f"actions:{request_id}",
                "type": "button",
                "text": {"type": "plain_text", "text": "Approve"},
                "value": request_id,
                "style": "primary",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise LookupError("VmRSS not found")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loop_choice() -> Any:
    """The loop `sayso run` would take (`SAYSO_EVENT_LOOP`, `auto` when unset), for the bench's
    own servers: the bot's and the bare Bolt floor's run on the same kind of loop."""
    choice = os.environ.get("SAYSO_EVENT_LOOP", "auto")
    if choice not in ("auto", "uvloop", "asyncio"):
        raise SystemExit(f"SAYSO_EVENT_LOOP={choice!r}: auto, uvloop or asyncio")
    return choice
