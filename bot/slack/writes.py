"""Slack writes as outbox rows (store/outbox.py): what the presenter shows is a row before it is
sent, and the dispatcher (bot/slack/outbox.py) sends it, paced, coalesced and through outages.

Keys (one row per logical Slack message; a later put of the same key replaces its state):
`root:{run_id}` (the run's root message, its status checklist folded in), `status:{run_id}`
(a follow-up run's checklist, in the thread it continues), `card:{request_id}`,
`answer:{run_id}:...` (streams and answer parts), `home:{team}:{user}`, `ephemeral:{uuid}`,
`dm:{uuid}`, and one key per notice (`failure:{run_id}`, `reminder:{request_id}`...).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from bot.agent.util import utcnow
from bot.slack.outbox_calls import EVENT_TYPE
from store.outbox import Outbox

EPHEMERAL_TTL = 120.0  # seconds: a refusal or a notice shown later than this is useless
_HELD = 600.0  # seconds a row registered around a direct post waits before the dispatcher


def tag(key: str, version: int) -> dict[str, Any]:
    """The metadata the dispatcher puts on its posts: a direct post carries the same, so a
    lookup after a crash finds it."""
    return {"event_type": EVENT_TYPE, "event_payload": {"key": key, "version": version}}


class Writes:
    """Puts rows; never awaits Slack."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    async def message(
        self,
        key: str,
        channel: str | None,
        message: dict[str, Any],
        *,
        thread_ts: str | None = None,
        thread_key: str | None = None,
        after: str | None = None,
        delay: float = 0.0,
        only: str | None = None,
    ) -> int:
        """Put the message's latest state; `only="new"` / `"existing"`: see `Outbox.put`
        (0: nothing written)."""
        return await self.outbox.put(
            key,
            channel=channel,
            thread_ts=thread_ts,
            thread_key=thread_key if thread_ts is None else None,
            after=after,
            payload=message,
            delay=delay,
            only=only,
        )

    async def while_running(
        self, key: str, channel: str, message: dict[str, Any], run_id: str
    ) -> int:
        """Put the latest state of a message that exists, only while the run is running."""
        return await self.outbox.put(key, channel=channel, payload=message, while_running=run_id)

    async def exists(self, key: str) -> bool:
        return await self.outbox.get(key) is not None

    async def hold(self, key: str, channel: str, message: dict[str, Any]) -> int:
        """Register a message about to be posted directly (not by the dispatcher): the row
        waits, marked as maybe posted, so a crash before `posted` ends in a lookup (adopt),
        never in a second post."""
        version = await self.outbox.put(key, channel=channel, payload=message, delay=_HELD)
        await self.outbox.mark_failed(
            key,
            utcnow() + timedelta(seconds=_HELD),
            "posted directly",
            maybe_sent=True,
            count=False,
        )
        return version

    async def posted(self, key: str, version: int, ts: str) -> None:
        await self.outbox.mark_sent(key, version, ts)

    async def known(self, key: str, channel: str, ts: str, message: dict[str, Any]) -> None:
        """A message posted before the outbox (no row yet): its row, so updates go out."""
        if not await self.exists(key):
            version = await self.outbox.put(key, channel=channel, payload=message, delay=_HELD)
            await self.outbox.mark_sent(key, version, ts)

    async def ephemeral(
        self, user: str, text: str, channel: str | None, thread_ts: str | None = None
    ) -> None:
        """A private line to one person (in a DM when there is no channel); it expires."""
        if channel:
            await self.outbox.put(
                f"ephemeral:{uuid.uuid4().hex}",
                kind="ephemeral",
                channel=channel,
                thread_ts=thread_ts,
                user=user,
                text=text,
                expires_in=EPHEMERAL_TTL,
            )
        else:
            await self.outbox.put(f"dm:{uuid.uuid4().hex}", channel=user, text=text)

    async def home(self, team: str, user: str, view: dict[str, Any]) -> None:
        await self.outbox.put(
            f"home:{team}:{user}", kind="home", user=user, team=team, payload={"view": view}
        )
