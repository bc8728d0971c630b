"""The replay guard covers Slack's whole ±5-minute window: a signature is remembered until its
timestamp has left the window, and timestamps far in the future are refused outright."""

from __future__ import annotations

import time

import aiohttp

from bot.sandbox import payloads
from bot.sandbox.core import ResponseUrl
from bot.sandbox.delivery import Deliverer, sign
from bot.slack.middleware import ReplayGuard
from tests.e2e.harness import SECRET, Harness


def slash_body(h: Harness, text: str = "ops deploy v2 to staging") -> str:
    sb = h.sandbox
    info = sb.ws.ensure_channel("C_GENERAL")
    response_url = sb.issue_response_url(ResponseUrl(channel="C_GENERAL", user="U_REQUESTER"))
    fields = payloads.slash_command(
        sb.person("U_REQUESTER"),
        info,
        "/sayso",
        text,
        response_url,
        sb.issue_trigger("U_REQUESTER"),
    )
    return Deliverer.encode_form(fields)


async def post_signed(h: Harness, body: str, timestamp: int) -> int:
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(timestamp),
        "X-Slack-Signature": sign(SECRET, str(timestamp), body),
    }
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"{h.url}/slack/events", data=body.encode(), headers=headers) as r,
    ):
        return r.status


async def test_a_request_stamped_250s_ahead_is_refused_and_so_is_its_replay(
    harness: Harness,
) -> None:
    h = harness
    body = slash_body(h)
    stamped = int(time.time()) + 250
    assert await post_signed(h, body, stamped) == 401
    assert h.bot is not None
    h.bot.replay_guard.clock = lambda: time.time() + 301  # the old memory would have forgotten
    assert await post_signed(h, body, stamped) == 409
    await h.idle()
    assert h.sandbox.messages("C_GENERAL") == []
    assert h.model.requests == []


async def test_a_replay_after_300s_is_still_refused_while_its_timestamp_is_accepted(
    harness: Harness,
) -> None:
    h = harness
    h.model.reply(text="Nothing to deploy.")
    body = slash_body(h)
    stamped = int(time.time()) + 30  # clock drift Slack may show
    assert await post_signed(h, body, stamped) == 200
    assert h.bot is not None
    h.bot.replay_guard.clock = lambda: time.time() + 301
    assert await post_signed(h, body, stamped) == 409


def test_the_guard_remembers_a_future_signature_until_its_timestamp_leaves_the_window() -> None:
    now = [1_000_000.0]
    guard = ReplayGuard(future_skew=300, clock=lambda: now[0])
    stamped = now[0] + 250
    assert guard.first("v0=sig", stamped)
    now[0] += 301  # 51 s past the timestamp: Slack's window still accepts it
    assert not guard.first("v0=sig", stamped)
    now[0] = stamped + 299
    assert not guard.first("v0=sig", stamped)
    now[0] = stamped + 301  # outside the window: Bolt refuses it as stale anyway
    assert guard.first("v0=sig", stamped)


def test_timestamps_beyond_a_small_skew_are_too_far_ahead() -> None:
    guard = ReplayGuard(clock=lambda: 1_000.0)
    assert not guard.too_far_ahead(1_000.0 + 60)
    assert guard.too_far_ahead(1_000.0 + 61)
