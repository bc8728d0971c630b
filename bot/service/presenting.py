"""Presentation failures are never fatal: the one wrapper around the presentation port.

A run, a decision or a sweep goes on when Slack refuses or is away; the failure is logged with
the verb and the run. Only `open_thread` raises: a run whose first message could not be posted
did not start, and its requester is told so."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

from bot.service.ports import STATUS, CardPlace, Notice, Presenter, RunChange
from bot.service.streaming import TextSink
from store import ApprovalRequestRecord, RunRecord

log = logging.getLogger("sayso.service")

T = TypeVar("T")


class SafePresenter:
    def __init__(self, presenter: Presenter) -> None:
        self.inner = presenter

    async def _safely(self, aw: Awaitable[T], verb: str, run_id: str | None) -> T | None:
        try:
            return await aw
        except Exception:
            log.exception("event=presenter_failed verb=%s run_id=%s", verb, run_id)
            return None

    async def open_thread(self, run: RunRecord, *, queued_ahead: int = 0) -> str:
        return await self.inner.open_thread(run, queued_ahead=queued_ahead)

    async def _shown(self, aw: Awaitable[None], verb: str, run_id: str) -> bool:
        """True when the presenter showed it; False when it failed (logged)."""
        try:
            await aw
            return True
        except Exception:
            log.exception("event=presenter_failed verb=%s run_id=%s", verb, run_id)
            return False

    async def run_changed(self, run: RunRecord, change: RunChange = STATUS) -> bool:
        """Show the change; False when the presenter failed (logged)."""
        return await self._shown(self.inner.run_changed(run, change), "run_changed", run.id)

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> CardPlace | None:
        return await self._safely(self.inner.post_card(run, request), "post_card", run.id)

    async def request_changed(self, run: RunRecord, request: ApprovalRequestRecord) -> bool:
        """Show the request as it is now; False when the presenter failed (logged)."""
        changed = self.inner.request_changed(run, request)
        return await self._shown(changed, "request_changed", run.id)

    async def channel_refusal(self, channel_id: str) -> str | None:
        return await self._safely(self.inner.channel_refusal(channel_id), "channel", None)

    async def say(self, notice: Notice, run: RunRecord | None = None) -> str | None:
        verb = f"say:{type(notice).__name__}"
        return await self._safely(self.inner.say(notice, run), verb, run.id if run else None)

    def text_sink(self, run: RunRecord) -> TextSink | None:
        try:
            return self.inner.text_sink(run)
        except Exception:
            log.exception("event=presenter_failed verb=text_sink run_id=%s", run.id)
            return None

    async def close(self) -> None:
        await self._safely(self.inner.close(), "close", None)
