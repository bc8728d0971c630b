"""What a posted outbox row tells the store (the dispatcher's `on_posted`): a run's root
message is its thread, a card's ts is its request's `message_ts` (and, for an API request
that names no thread, its run's thread too; a card posted away from its run's side pane gets
its link there). Idempotent: it may run twice after an adoption."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from store import Store
from store.outbox import OutboxRow

if TYPE_CHECKING:
    from bot.slack.presenter import SlackPresenter

log = logging.getLogger("sayso.slack")


class PostedRecorder:
    def __init__(self, store: Store, presenter: SlackPresenter | None = None) -> None:
        self.store = store
        self.presenter = presenter

    async def __call__(self, row: OutboxRow, ts: str) -> None:
        kind, _, ident = row.key.partition(":")
        if not row.channel or not ident:
            return
        if kind == "root":
            run = await self.store.runs.get(ident)
            if run is not None and run.thread_ts is None:
                await self.store.runs.set_thread(ident, row.channel, ts)
        elif kind == "card":
            await self.store.requests.set_message(ident, row.channel, ts)
            request = await self.store.requests.get(ident)
            run = await self.store.runs.get(request.spec.run_id) if request else None
            if run is not None and run.thread_ts is None and row.thread_ts is None:
                await self.store.runs.set_thread(run.id, row.channel, ts)
            if self.presenter is not None and run is not None and request is not None:
                if run.channel_id and run.channel_id != row.channel:  # posted elsewhere
                    await self.presenter.card_posted_elsewhere(run, request, row.channel, ts)
            log.debug("event=card_posted request_id=%s ts=%s", ident, ts)
