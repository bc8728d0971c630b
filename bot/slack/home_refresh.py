"""App Home refreshes, coalesced: at most one views.publish per person per `interval` seconds,
and none when the view is the one last published (their inbox did not change).

A person's Home is published when they open it (`refresh`), and after a change that concerns
them (`changed`) only if they opened it before (a Home row exists in the outbox): views.publish
is a Tier-4 call, and most approvers never look at their Home.

After every decision and every run that stops, the people concerned get their Home refreshed.
A burst of decisions would publish the same person's Home again and again; here the first
refresh of a quiet period goes out at once, later ones within `interval` are folded into one
trailing refresh that shows the state at that moment.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.service import Service
    from bot.service.registry import AgentRegistry

log = logging.getLogger("sayso.slack")

ViewBuilder = Callable[[str], Awaitable[dict[str, Any]]]
Publisher = Callable[[str, dict[str, Any]], Awaitable[None]]
Opened = Callable[[str], Awaitable[bool]]
REMEMBERED = 10_000  # people whose last published view is remembered (oldest forgotten)
OPENED_TTL = 30.0  # seconds a "never opened" answer is trusted before asking the store again


def home_builder(service: Service, agents: AgentRegistry) -> ViewBuilder:
    """A person's App Home view: their inbox, read through the facade."""
    from bot.slack.blocks import home
    from bot.slack.render import card_info, run_info

    async def home_of(user_id: str) -> dict[str, Any]:
        inbox = await service.inbox(user_id)
        return home.home_view(
            [card_info(request, run, agents) for request, run in inbox.pending],
            inbox.total,
            [run_info(r) for r in inbox.recent_runs],
            user_id=user_id,
            total_is_lower_bound=inbox.total_is_lower_bound,
        )

    return home_of


class HomeRefresher:
    def __init__(
        self,
        build: ViewBuilder,
        publish: Publisher,
        opened: Opened | None = None,
        interval: float = 2.0,
    ) -> None:
        self.build = build
        self.publish = publish
        self.opened = opened
        self.interval = interval
        self._never_opened: dict[str, float] = {}
        self._last_at: dict[str, float] = {}
        self._last_view: OrderedDict[str, str] = OrderedDict()
        self._pending: dict[str, asyncio.Task[None]] = {}

    async def refresh(self, user_id: str) -> None:
        """Refresh now if the person's Home was not published within `interval`; else make
        sure one refresh follows when it ends (the ones asked meanwhile are folded in)."""
        self._never_opened.pop(user_id, None)
        if user_id in self._pending:
            return
        wait = self._last_at.get(user_id, -1e9) + self.interval - time.monotonic()
        if wait <= 0:
            await self._refresh_now(user_id)
            return
        task = asyncio.create_task(self._refresh_later(user_id, wait), name=f"home:{user_id}")
        self._pending[user_id] = task

    async def changed(self, user_id: str) -> None:
        """Something in this person's inbox changed: refresh their Home if they opened it."""
        if self.opened is not None and user_id not in self._last_view:
            asked = self._never_opened.get(user_id)
            if asked is not None and time.monotonic() - asked < OPENED_TTL:
                return
            if not await self.opened(user_id):
                if len(self._never_opened) > REMEMBERED:
                    self._never_opened.clear()
                self._never_opened[user_id] = time.monotonic()
                return
            self._never_opened.pop(user_id, None)
        await self.refresh(user_id)

    async def _refresh_later(self, user_id: str, wait: float) -> None:
        try:
            await asyncio.sleep(wait)
            await self._refresh_now(user_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("event=home_refresh_failed user=%s", user_id)
        finally:
            self._pending.pop(user_id, None)

    async def _refresh_now(self, user_id: str) -> None:
        self._last_at[user_id] = time.monotonic()
        view = await self.build(user_id)
        digest = hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()
        if self._last_view.get(user_id) == digest:
            return  # nothing changed for this person
        await self.publish(user_id, view)
        self._last_view[user_id] = digest
        self._last_view.move_to_end(user_id)
        while len(self._last_view) > REMEMBERED:
            forgotten, _ = self._last_view.popitem(last=False)
            self._last_at.pop(forgotten, None)

    async def close(self) -> None:
        tasks = list(self._pending.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
