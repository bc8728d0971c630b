"""Runs, cards, clicks and what a person would see: helpers of the durable tests."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.waiting import eventually

ASK = "ops deploy v2 to staging"
ANSWER_MARK = "Tool result"  # the fake model's answer after the tool ran


@dataclass
class Card:
    channel: str
    root_ts: str
    ts: str


@dataclass
class Clicks:
    acks: list[float] = field(default_factory=list)
    last_at: float = 0.0


async def start_runs(
    h: Harness, asks: list[tuple[str, str]], within: float = 60, gap: float = 0.0
) -> list[Card]:
    """One run per (person, channel), `gap` seconds apart; the cards once every one is shown.
    (A run's root message is posted at once, outside the outbox's pacing: a burst of commands
    in one channel meets Slack's 1/s per channel with the Web client's own retries only.)"""
    for user, channel in asks:
        delivery = await h.sandbox.slash_command(user, ASK, channel=channel)
        assert delivery.ok, delivery
        await asyncio.sleep(gap)
    channels = sorted({c for _, c in asks})
    await h.sandbox.wait_for(lambda sb: len(cards(h, channels)) == len(asks), timeout=within)
    return cards(h, channels)


def cards(h: Harness, channels: list[str]) -> list[Card]:
    found = []
    for channel in channels:
        for root in h.sandbox.messages(channel):
            for m in h.sandbox.thread(channel, root["ts"])[1:]:
                if "Approval needed" in message_text(m) or has_button(m, "approve"):
                    found.append(Card(channel, root["ts"], m["ts"]))
    return found


async def approve_all(h: Harness, shown: list[Card], user: str = "U_APPROVER") -> Clicks:
    """Click Approve on every card, all at once; the ack time of each click."""
    clicks = Clicks()

    async def one(card: Card) -> None:
        started = time.monotonic()
        delivery = await h.sandbox.click(user, card.channel, card.ts, "approve")
        clicks.acks.append(time.monotonic() - started)
        assert delivery.ok, delivery

    await asyncio.gather(*(one(c) for c in shown))
    clicks.last_at = time.monotonic()
    return clicks


def card_decided(h: Harness, card: Card) -> bool:
    message = _message(h, card.channel, card.root_ts, card.ts)
    return (
        message is not None
        and not has_button(message, "approve")
        and ("Approved" in message_text(message))
    )


def answers(h: Harness, card: Card) -> list[dict[str, Any]]:
    thread = h.sandbox.thread(card.channel, card.root_ts)[1:]
    return [m for m in thread if ANSWER_MARK in message_text(m) and "markdown_text" not in m]


def all_final(h: Harness, shown: list[Card]) -> bool:
    return all(card_decided(h, c) and len(answers(h, c)) >= 1 for c in shown)


def duplicates(h: Harness, channels: list[str]) -> list[str]:
    """Messages shown twice: the same outbox key on two messages, or the same text twice in
    one thread."""
    keys: Counter[str] = Counter()
    texts: Counter[tuple[str, str]] = Counter()
    for channel in channels:
        for root in h.sandbox.messages(channel):
            for m in h.sandbox.thread(channel, root["ts"]):
                meta = (m.get("metadata") or {}).get("event_payload") or {}
                if meta.get("key"):
                    keys[str(meta["key"])] += 1
                texts[(root["ts"], message_text(m))] += 1
    twice = [k for k, n in keys.items() if n > 1]
    twice += [f"{t[0]}: {t[1][:60]}" for t, n in texts.items() if n > 1]
    return twice


def _message(h: Harness, channel: str, root_ts: str, ts: str) -> dict[str, Any] | None:
    for m in h.sandbox.thread(channel, root_ts):
        if m["ts"] == ts:
            return m
    return None


def web_calls(h: Harness, since: int = 0) -> Counter[str]:
    return Counter(c.method for c in h.sandbox.calls[since:])


async def runs_idle(h: Harness) -> None:
    """No run is being driven (the outbox may still hold rows: Slack may be down)."""
    if h.bot is not None:
        await h.bot.service.idle()
    if h.worker is not None:
        worker = h.worker
        await eventually(lambda: not worker.busy, timeout=60, what="the worker to be idle")
