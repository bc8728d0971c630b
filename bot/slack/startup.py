"""Learning the workspace at start, and deciding nothing until it is known.

Who may decide depends on the workspace's team id (people of other workspaces never decide
unless listed), which only `auth.test` tells. When it fails at start the process starts anyway
and retries it with backoff; until it succeeds `/healthz` answers 503 and every command, click,
modal submission and event gets "sayso is starting" and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Service
from bot.service.permissions import STARTING
from bot.slack.listeners.common import actor_from, tell, where

log = logging.getLogger("sayso.slack")

NOT_CONNECTED = "auth.test has not succeeded yet: the workspace is unknown"


class WorkspaceIdentity:
    """Asks Slack which workspace this is (`auth.test`), again with backoff until it answers.

    The answer goes to `service.workspace_team_id`, the one place the service reads it."""

    def __init__(
        self,
        client: AsyncWebClient,
        service: Service,
        *,
        first_delay: float = 0.5,
        max_delay: float = 30.0,
    ) -> None:
        self.client = client
        self.service = service
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.attempts = 0
        self._retrying: asyncio.Task[None] | None = None
        self.answer: Any = None
        """The `auth.test` answer, once it came."""
        self.on_known: list[Callable[[Any], None]] = []
        """Told the answer once it comes (Bolt's authorization reuses it)."""

    @property
    def known(self) -> bool:
        return self.service.workspace_team_id is not None

    async def start(self) -> None:
        """One attempt now; if it fails, keep trying in the background."""
        if not await self.learn():
            self._retrying = asyncio.create_task(self._retry(), name="sayso-auth-test")

    async def stop(self) -> None:
        if self._retrying is not None:
            self._retrying.cancel()
            await asyncio.gather(self._retrying, return_exceptions=True)
            self._retrying = None

    async def learn(self) -> bool:
        """One `auth.test`; True once the workspace is known."""
        self.attempts += 1
        try:
            auth = await self.client.auth_test()
        except Exception as exc:
            log.warning("event=auth_test_failed attempt=%d error=%s", self.attempts, exc)
            return False
        team_id = auth.get("team_id")
        if not team_id:
            log.warning("event=auth_test_failed attempt=%d error=no_team_id", self.attempts)
            return False
        self.service.workspace_team_id = team_id
        self.answer = auth
        for told in self.on_known:
            told(auth)
        log.info("event=connected team=%s bot_user=%s", team_id, auth.get("user_id"))
        return True

    def share_with(self, app: Any) -> None:
        """Bolt's single-workspace authorization makes its own `auth.test` on the first
        request, once per request that comes before the first answer: a burst of commands at
        start is a burst of `auth.test` (rate limited, and refused to people as "installation
        failed"). It gets this answer instead."""
        from slack_bolt.middleware.authorization.async_single_team_authorization import (
            AsyncSingleTeamAuthorization,
        )

        for middleware in getattr(app, "_async_middleware_list", ()):  # Bolt's own, built once
            if isinstance(middleware, AsyncSingleTeamAuthorization):

                def told(auth: Any, m: AsyncSingleTeamAuthorization = middleware) -> None:
                    m.auth_test_result = auth

                self.on_known.append(told)
                if self.answer is not None:
                    told(self.answer)

    async def _retry(self) -> None:
        delay = self.first_delay
        while True:
            await asyncio.sleep(delay)
            if await self.learn():
                return
            delay = min(delay * 2, self.max_delay)


_NO_WORKSPACE_NEEDED = ("url_verification", "ssl_check")
"""Requests Slack sends to check the endpoint itself, answered by Bolt."""

Next = Callable[[], Awaitable[BoltResponse]]


class RefuseUntilKnown(AsyncMiddleware):
    """Bolt middleware (`before_authorize`, after the signature check; Bolt's own authorization
    calls auth.test too): while the workspace is unknown, answer "sayso is starting" to the
    person and hand nothing to the listeners."""

    def __init__(self, identity: WorkspaceIdentity) -> None:
        self.identity = identity
        self._telling: set[asyncio.Task[None]] = set()

    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Next
    ) -> BoltResponse | None:
        body = req.body if isinstance(req.body, dict) else {}
        kind = "command" if "command" in body else str(body.get("type", ""))
        if self.identity.known or kind in _NO_WORKSPACE_NEEDED:
            return await next()
        log.info("event=refused_while_starting kind=%s", kind)
        if kind == "command":
            return _json({"response_type": "ephemeral", "text": STARTING})
        if kind == "view_submission":
            return _json(_starting_view_answer(body.get("view") or {}))
        if kind == "block_suggestion":
            return _json({"options": []})
        if kind == "block_actions":
            channel, thread = where(body)
            self._tell(actor_from(body).user_id, channel, thread)
        elif kind == "event_callback":
            self._tell_event(body.get("event") or {})
        return BoltResponse(status=200, body="")

    def _tell_event(self, event: dict[str, Any]) -> None:
        """A mention, or a reply in a run's thread: tell its author (other events: nothing)."""
        user, channel = event.get("user"), event.get("channel")
        if event.get("bot_id") or not isinstance(user, str) or not isinstance(channel, str):
            return
        thread = event.get("thread_ts")
        if event.get("type") == "app_mention":
            self._tell(user, channel, thread)
        elif event.get("type") == "message" and isinstance(thread, str):
            self._tell(user, channel, thread, only_in_run_thread=True)

    def _tell(
        self,
        user: str,
        channel: str | None,
        thread: str | None,
        *,
        only_in_run_thread: bool = False,
    ) -> None:
        if not user:
            return

        async def send() -> None:
            service = self.identity.service
            if only_in_run_thread and not (
                channel and thread and await service.is_run_thread(channel, thread)
            ):
                return
            await tell(self.identity.client, user, STARTING, channel, thread)

        task = asyncio.create_task(send())
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)


def _starting_view_answer(view: dict[str, Any]) -> dict[str, Any]:
    """The modal stays open with "sayso is starting" on its first input (nothing submitted)."""
    for block in view.get("blocks") or []:
        if isinstance(block, dict) and block.get("type") == "input" and block.get("block_id"):
            return {"response_action": "errors", "errors": {block["block_id"]: STARTING}}
    return {
        "response_action": "update",
        "view": {
            "type": "modal",
            "title": {"type": "plain_text", "text": "sayso"},
            "close": {"type": "plain_text", "text": "Close"},
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": STARTING}}],
        },
    }


def _json(answer: dict[str, Any]) -> BoltResponse:
    return BoltResponse(
        status=200,
        body=json.dumps(answer),
        headers={"content-type": "application/json; charset=utf-8"},
    )
