"""Can a card be shown in a channel? `conversations.info`, cached: the approval API asks before
it accepts a request, so a channel Slack would refuse is a 422 at once, while the card itself
is posted later by the outbox."""

from __future__ import annotations

import logging
import time

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("sayso.slack")

OK_TTL = 600.0  # seconds a usable channel is trusted
REFUSED_TTL = 30.0  # seconds a refusal is kept (the bot may be invited meanwhile)
# errors that mean a card can never be posted there (others: unknown now, try anyway)
REFUSALS = ("channel_not_found", "is_archived", "not_in_channel", "invalid_channel")


class ChannelCheck:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self._known: dict[str, tuple[float, str | None]] = {}

    async def refusal(self, channel_id: str) -> str | None:
        now = time.monotonic()
        seen = self._known.get(channel_id)
        if seen is not None and now < seen[0]:
            return seen[1]
        try:
            answer = await self.client.conversations_info(channel=channel_id)
        except SlackApiError as exc:
            code = str(exc.response.get("error") or "")
            if code not in REFUSALS:
                return None
            self._remember(channel_id, now + REFUSED_TTL, code)
            return code
        except Exception as exc:  # Slack away: accept, the outbox posts when it is back
            log.info("event=channel_check_unknown channel=%s error=%r", channel_id, exc)
            return None
        info = answer.get("channel") or {}
        archived: str | None = "is_archived" if info.get("is_archived") else None
        self._remember(channel_id, now + (REFUSED_TTL if archived else OK_TTL), archived)
        return archived

    def _remember(self, channel_id: str, until: float, code: str | None) -> None:
        if len(self._known) > 10_000:
            self._known.clear()
        self._known[channel_id] = (until, code)
