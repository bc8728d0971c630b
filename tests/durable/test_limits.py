"""Slack's published rate limits on: 30 runs by 6 people in 5 channels, all approved within
10 s, are final within 120 s of the last click, with nothing twice and few 429s; with the
limits off, a decision costs at most 4 Web API calls on average (issue 22)."""

from __future__ import annotations

import time

from tests.durable.conftest import Durable
from tests.durable.scenario import (
    all_final,
    answers,
    approve_all,
    card_decided,
    duplicates,
    start_runs,
    web_calls,
)
from tests.helpers.waiting import eventually

PEOPLE = ["U_REQUESTER", "U_APPROVER", "U_APPROVER2", "U_MEMBER", "U_ASKER5", "U_ASKER6"]
CHANNELS = ["C_GENERAL", "C_OPS", "C_DEPLOYS", "C_SUPPORT", "C_INFRA"]
READS = ("users.info", "auth.test", "conversations.info", "conversations.members")


async def test_thirty_runs_under_slacks_limits_converge_with_few_429s(durable: Durable) -> None:
    async with durable(rate_limits=True) as h:
        asks = [(PEOPLE[i % 6], CHANNELS[i % 5]) for i in range(30)]
        shown = await start_runs(h, asks, within=120, gap=0.3)
        await h.idle()
        before = sum(h.sandbox.limits.ratelimited.values())
        started = time.monotonic()
        clicks = await approve_all(h, shown)
        assert clicks.last_at - started < 10
        left = clicks.last_at + 120 - time.monotonic()
        await eventually(lambda: all_final(h, shown), timeout=left, what="final within 120 s")
        took = time.monotonic() - clicks.last_at
        # the root messages' updates come after the cards' (one Tier-3 budget of about
        # 50 chat.update a minute for 60 updates): all of Slack converges within the 120 s
        assert h.bot is not None and h.bot.dispatcher is not None
        await h.bot.dispatcher.drain(timeout=clicks.last_at + 120 - time.monotonic())
        await h.idle()
        assert all(card_decided(h, c) for c in shown)
        assert [len(answers(h, c)) for c in shown] == [1] * 30
        assert len(h.effects.deploys) == 30
        assert duplicates(h, CHANNELS) == []
        received = sum(h.sandbox.limits.ratelimited.values()) - before
        print(
            f"\n30 decisions under Slack's limits: final {took:.1f} s after the last click, "
            f"{received} HTTP 429s ({dict(h.sandbox.limits.ratelimited)})"
        )
        assert received <= 30  # the pacing keeps them rare (843 before the outbox)


async def test_a_decision_costs_at_most_four_slack_calls(durable: Durable) -> None:
    async with durable() as h:
        shown = await start_runs(h, [("U_REQUESTER", "C_GENERAL")] * 10)
        await h.idle()
        since = len(h.sandbox.calls)
        for card in shown:  # one at a time, as a team does
            await approve_all(h, [card])
            await eventually(lambda c=card: all_final(h, [c]), timeout=30, what="final")
        await h.idle()
        calls = web_calls(h, since)
        writes = {m: n for m, n in calls.items() if m not in READS}
        per_decision = sum(writes.values()) / len(shown)
        print(f"\nSlack calls per decision: {per_decision:.2f} writes ({dict(calls)})")
        assert per_decision <= 4.0, calls
        assert sum(calls.values()) / len(shown) <= 4.5, calls
        assert duplicates(h, ["C_GENERAL"]) == []
