"""Requests Slack never sends, correctly signed, over real HTTP: a body that is not UTF-8, an
unknown charset, payloads of shapes Bolt raises on. Each gets a 400 and one log line, never a
500 or a traceback, and the bot keeps working."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from tests.e2e.flows import start_deploy
from tests.e2e.harness import SECRET, Harness

FORM = "application/x-www-form-urlencoded"


async def post_signed(h: Harness, body: bytes, content_type: str = FORM) -> int:
    timestamp = str(int(time.time()))
    base = b"v0:" + timestamp.encode() + b":" + body
    signature = "v0=" + hmac.new(SECRET.encode(), base, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature,
    }
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"{h.url}/slack/events", data=body, headers=headers) as r,
    ):
        return r.status


def payload(value: dict[str, Any]) -> bytes:
    return ("payload=" + quote(json.dumps(value))).encode()


USER = {"id": "U_APPROVER", "team_id": "T_SANDBOX"}
TEAM = {"id": "T_SANDBOX"}
MALFORMED: list[tuple[str, bytes, str]] = [
    ("not utf-8", "payload=caf\xe9".encode("latin-1"), FORM),
    ("not utf-8 json", b'{"type": "\xff\xfe"}', "application/json"),
    ("unknown charset", b"command=%2Fsayso&text=hi", FORM + "; charset=klingon"),
    (
        "view without type",
        payload({"type": "view_submission", "user": USER, "team": TEAM, "view": {"id": "V1"}}),
        FORM,
    ),
    (
        "view with callback_id but no type",
        payload(
            {
                "type": "view_submission",
                "user": USER,
                "team": TEAM,
                "view": {"id": "V1", "callback_id": "sayso_reject", "private_metadata": "x"},
            }
        ),
        FORM,
    ),
    (
        "view_closed without type",
        payload({"type": "view_closed", "user": USER, "team": TEAM, "view": {}}),
        FORM,
    ),
    (
        "action without action_id",
        payload({"type": "block_actions", "user": USER, "team": TEAM, "actions": [{}]}),
        FORM,
    ),
    (
        "view that is a number",
        payload({"type": "view_submission", "user": USER, "team": TEAM, "view": {"type": 7}}),
        FORM,
    ),
]


@pytest.mark.parametrize(("what", "body", "content_type"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_malformed_requests_get_400_and_one_log_line(
    harness: Harness, caplog: pytest.LogCaptureFixture, what: str, body: bytes, content_type: str
) -> None:
    caplog.set_level(logging.INFO)
    caplog.clear()
    assert await post_signed(harness, body, content_type) == 400, what
    await harness.idle()
    ours = [r for r in caplog.records if r.name.startswith(("sayso", "aiohttp", "slack"))]
    assert not [r for r in ours if r.exc_info or r.levelno >= logging.ERROR], what
    refused = [r for r in ours if "malformed_request" in r.getMessage()]
    assert len(refused) == 1, [r.getMessage() for r in ours]
    assert harness.sandbox.messages("C_GENERAL") == []


async def test_the_bot_still_works_after_malformed_requests(harness: Harness) -> None:
    for _, body, content_type in MALFORMED:
        await post_signed(harness, body, content_type)
    card = await start_deploy(harness)
    assert card["blocks"]
