"""People and user groups from Slack's Web API, cached briefly."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.ports import DirectoryUnavailable, Person

log = logging.getLogger("sayso.slack")
MEMBERS_PAGE = 200
T = TypeVar("T")


class SlackDirectory:
    """users.info, usergroups.users.list and conversations.members, each answer kept for
    `ttl` seconds, and used past it while Slack is unreachable (an outage must not refuse a
    person sayso knew a minute ago; with nothing known `DirectoryUnavailable` is raised, never
    a "no").
    Concurrent misses of one key share one call: thirty clicks at once after the cache
    lapsed made thirty `conversations.members` calls, and Slack's 429s then held the clicks."""

    def __init__(self, client: AsyncWebClient, ttl: float = 60.0) -> None:
        self.client = client
        self.ttl = ttl
        self._people: dict[str, tuple[float, Person | None]] = {}
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._channels: dict[str, tuple[float, frozenset[str]]] = {}
        self._asking: dict[tuple[str, str], asyncio.Task[Any]] = {}

    async def _once(self, key: tuple[str, str], ask: Callable[[], Awaitable[T]]) -> T:
        """`ask()`, or the answer of the same question already being asked (the call runs as
        its own task: one asker cancelled does not cancel it for the others)."""
        task = self._asking.get(key)
        if task is None:
            task = self._asking[key] = asyncio.ensure_future(ask())
            task.add_done_callback(lambda _: self._asking.pop(key, None))
        return await asyncio.shield(task)

    async def person(self, user_id: str) -> Person | None:
        hit = self._people.get(user_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return await self._once(("user", user_id), lambda: self._person(user_id))

    async def group_members(self, group_id: str) -> frozenset[str]:
        hit = self._groups.get(group_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return await self._once(("group", group_id), lambda: self._group_members(group_id))

    async def channel_members(self, channel_id: str) -> frozenset[str]:
        hit = self._channels.get(channel_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        return await self._once(("channel", channel_id), lambda: self._channel_members(channel_id))

    async def _person(self, user_id: str) -> Person | None:
        hit = self._people.get(user_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        try:
            user = (await self.client.users_info(user=user_id))["user"]
        except UNREACHABLE as exc:
            if hit is None:
                raise DirectoryUnavailable(type(exc).__name__) from exc
            return hit[1]
        except SlackApiError as exc:
            if _down(exc):
                if hit is None:
                    raise DirectoryUnavailable(str(exc.response.get("error"))) from exc
                return hit[1]
            log.warning(
                "event=users_info_failed user=%s error=%s", user_id, exc.response.get("error")
            )
            return None
        person = Person(
            user_id=user_id,
            team_id=user.get("team_id"),
            is_bot=bool(user.get("is_bot")),
            is_guest=bool(user.get("is_restricted") or user.get("is_ultra_restricted")),
            deleted=bool(user.get("deleted")),
        )
        self._people[user_id] = (time.monotonic() + self.ttl, person)
        return person

    async def _group_members(self, group_id: str) -> frozenset[str]:
        hit = self._groups.get(group_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        try:
            users = (await self.client.usergroups_users_list(usergroup=group_id))["users"]
        except UNREACHABLE as exc:
            if hit is None:
                raise DirectoryUnavailable(type(exc).__name__) from exc
            return hit[1]
        except SlackApiError as exc:
            if _down(exc):
                if hit is None:
                    raise DirectoryUnavailable(str(exc.response.get("error"))) from exc
                return hit[1]
            log.warning(
                "event=usergroup_failed group=%s error=%s", group_id, exc.response.get("error")
            )
            return frozenset()
        members = frozenset(users or [])
        self._groups[group_id] = (time.monotonic() + self.ttl, members)
        return members

    async def _channel_members(self, channel_id: str) -> frozenset[str]:
        hit = self._channels.get(channel_id)
        if hit and hit[0] > time.monotonic():
            return hit[1]
        members: set[str] = set()
        cursor: str | None = None
        try:
            while True:
                page = await self.client.conversations_members(
                    channel=channel_id, limit=MEMBERS_PAGE, cursor=cursor
                )
                members.update(page.get("members") or [])
                cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
                if not cursor:
                    break
        except UNREACHABLE as exc:
            if hit is None:
                raise DirectoryUnavailable(type(exc).__name__) from exc
            return hit[1]
        except SlackApiError as exc:
            if _down(exc):
                if hit is None:
                    raise DirectoryUnavailable(str(exc.response.get("error"))) from exc
                return hit[1]
            log.warning(
                "event=channel_members_failed channel=%s error=%s",
                channel_id,
                exc.response.get("error"),
            )
            return frozenset()
        found = frozenset(members)
        self._channels[channel_id] = (time.monotonic() + self.ttl, found)
        return found


UNREACHABLE = (aiohttp.ClientError, OSError, TimeoutError)


def _down(exc: SlackApiError) -> bool:
    """Slack answered, but is down (5xx) or limiting us: the last answer still holds."""
    status = int(getattr(exc.response, "status_code", 0) or 0)
    return status >= 500 or status == 429
