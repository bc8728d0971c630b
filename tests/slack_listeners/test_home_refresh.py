"""App Home refreshes are coalesced: one publish per person per interval, none unchanged."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.slack.home_refresh import HomeRefresher


async def test_a_burst_of_refreshes_publishes_twice_and_an_unchanged_home_not_at_all() -> None:
    inbox = {"U1": 0}
    published: list[tuple[str, int]] = []

    async def build(user_id: str) -> dict[str, Any]:
        return {"type": "home", "count": inbox[user_id]}

    async def publish(user_id: str, view: dict[str, Any]) -> None:
        published.append((user_id, view["count"]))

    homes = HomeRefresher(build, publish, interval=0.3)
    await homes.refresh("U1")  # the first of a quiet period goes out at once
    assert published == [("U1", 0)]
    for n in range(1, 11):  # ten decisions within the interval
        inbox["U1"] = n
        await homes.refresh("U1")
    assert published == [("U1", 0)]
    await asyncio.sleep(0.5)
    assert published == [("U1", 0), ("U1", 10)]  # one trailing refresh with the latest state
    await asyncio.sleep(0.4)
    await homes.refresh("U1")  # nothing changed since: nothing published
    assert published == [("U1", 0), ("U1", 10)]
    await homes.close()
