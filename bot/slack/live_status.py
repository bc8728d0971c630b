"""One live status message per run, updated in place and rate-limited (chat.update is Tier 3).

Updates are coalesced per run: the newest state wins, and a run's status message (and its
root message's status line) change at most once per `interval` seconds. The checklist is
built from the run's saved state, so any replica shows the same thing.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks import messages
from bot.slack.blocks.status import status_message
from bot.slack.render import run_info, run_steps
from store import RunRecord

log = logging.getLogger("sayso.slack")

UPDATE_INTERVAL = 1.0  # seconds between two updates of one run's status
REMEMBERED_RUNS = 1000  # status messages remembered (a run continued here later finds its own)


@dataclass
class _Live:
    ts: str | None = None  # the status message, once posted
    latest: RunRecord | None = None  # the newest state not shown yet
    shown: dict[str, Any] | None = None
    root_shown: dict[str, Any] | None = None
    last_sent: float = float("-inf")
    flusher: asyncio.Task[None] | None = None
    finished: bool = False


class LiveStatus:
    """Keeps each run's status message in step with its saved state."""

    def __init__(self, client: AsyncWebClient, interval: float = UPDATE_INTERVAL) -> None:
        self.client = client
        self.interval = interval
        self._runs: dict[str, _Live] = {}

    def show(self, run: RunRecord) -> None:
        """Show `run` as it is now (soon: at most one update per interval; newest wins)."""
        if not (run.channel_id and run.thread_ts) or not run_steps(run.result):
            return
        live = self._runs.get(run.id)
        if live is None:
            self._forget_idle()
            live = self._runs[run.id] = _Live()
        live.latest = run
        if live.flusher is None or live.flusher.done():
            live.flusher = asyncio.create_task(self._flush(run.id, live), name=f"status:{run.id}")

    def _forget_idle(self) -> None:
        """Keep memory bounded: forget the oldest runs with no update under way (a run
        continued later finds its status message again in its thread)."""
        for run_id in list(self._runs)[: max(0, len(self._runs) - REMEMBERED_RUNS + 1)]:
            flusher = self._runs[run_id].flusher
            if flusher is None or flusher.done():
                del self._runs[run_id]

    def root_shown(self, run_id: str) -> dict[str, Any] | None:
        """The root message last shown for the run by this process, if known."""
        live = self._runs.get(run_id)
        return live.root_shown if live is not None else None

    def note_root(self, run_id: str, root: dict[str, Any]) -> None:
        """The root message was updated elsewhere (the run stopped): not sent again here."""
        live = self._runs.get(run_id)
        if live is not None:
            live.root_shown = root

    async def settle(self, run_id: str) -> None:
        """Wait until the newest state of the run is shown (tests, before a final message)."""
        live = self._runs.get(run_id)
        if live is not None and live.flusher is not None:
            await asyncio.shield(live.flusher)

    async def _flush(self, run_id: str, live: _Live) -> None:
        loop = asyncio.get_running_loop()
        while live.latest is not None:
            wait = live.last_sent + self.interval - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            run, live.latest = live.latest, None
            if run is None:
                break
            try:
                await self._send(run, live)
            except Exception as exc:  # a status update must never break the run
                log.warning("event=status_update_failed run_id=%s error=%r", run_id, exc)
            live.last_sent = loop.time()
        if live.latest is None and live.finished:
            self._runs.pop(run_id, None)

    async def _send(self, run: RunRecord, live: _Live) -> None:
        assert run.channel_id and run.thread_ts
        message = status_message(run.id, run_steps(run.result))
        live.finished = run.status in ("completed", "failed", "cancelled")
        if live.ts is None and run.pause_seq > 0:  # maybe posted by another replica
            live.ts = await self._find(run)
        if live.ts is None:
            resp = await self.client.chat_postMessage(
                channel=run.channel_id, thread_ts=run.thread_ts, **message
            )
            live.ts = str(resp["ts"])
        elif message != live.shown:
            await self.client.chat_update(channel=run.channel_id, ts=live.ts, **message)
        live.shown = message
        result = run.result
        if result is None or result.run.context.get("follow_up") or run.requester is None:
            return
        root = messages.root_message(run_info(run))
        if root != live.root_shown:
            await self.client.chat_update(channel=run.channel_id, ts=run.thread_ts, **root)
            live.root_shown = root

    async def _find(self, run: RunRecord) -> str | None:
        """The run's status message in its thread, if one was posted (by any replica)."""
        wanted = status_message(run.id, [])["blocks"][0]["block_id"]
        try:
            resp = await self.client.conversations_replies(
                channel=str(run.channel_id), ts=str(run.thread_ts), limit=200
            )
        except Exception as exc:
            log.warning("event=status_lookup_failed run_id=%s error=%r", run.id, exc)
            return None
        for message in resp.get("messages") or []:
            blocks = message.get("blocks") or []
            if blocks and blocks[0].get("block_id") == wanted:
                return str(message["ts"])
        return None
