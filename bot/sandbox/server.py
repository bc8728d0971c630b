"""`SlackSandbox`: a local Slack for tests and for `sayso demo`.

sandbox = SlackSandbox(signing_secret="...", bot_url="http://127.0.0.1:3000/slack/events")
await sandbox.start(host="127.0.0.1", port=0)   # sandbox.url, sandbox.api_url
...
await sandbox.stop()
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from bot.sandbox import api_socket, page
from bot.sandbox.actions import PersonActions
from bot.sandbox.core import ApiCall
from bot.sandbox.responses import handle_response_url
from bot.sandbox.webapi import WebApi

log = logging.getLogger("sayso.sandbox")


class SlackSandbox(PersonActions):
    """Fake Slack workspace: Web API at /api/, deliveries to `bot_url`, a web page at /."""

    _runner: web.AppRunner | None = None
    _site: web.TCPSite | None = None
    _host = "127.0.0.1"
    _port = 0

    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        api = WebApi(self)
        api_socket.add_routes(app, self)  # before /api/{method}: apps.connections.open
        app.router.add_route("*", "/api/{method}", api.handle)
        app.router.add_post("/sandbox/response/{key}", self._response_url)
        page.add_routes(app, self)
        return app

    async def _response_url(self, request: web.Request) -> web.Response:
        return await handle_response_url(self, request)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on host:port (0 picks a free port); `self.url` is set once listening."""
        self._runner = web.AppRunner(self.build_app(), access_log=None)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, host, port)
        await self._site.start()
        bound = self._runner.addresses[0]
        self._host, self._port = host, bound[1]
        self.url = f"http://{host}:{bound[1]}"
        log.info("event=sandbox_started url=%s bot_url=%s", self.url, self.bot_url)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        page.stop_streams(self)
        await self.socket.close()
        await self._deliverer.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        log.info("event=sandbox_stopped url=%s", self.url)

    # outages ---------------------------------------------------------------------------
    async def outage(self, seconds: float, mode: str = "503") -> None:
        """Slack goes down for `seconds` (returns at once): every Web API call answers 503
        (`mode="503"`), or the connection is refused (`mode="refuse"`: the sandbox stops
        listening; a kept-alive connection breaks). The page and response URLs are down too
        when refused."""
        if mode not in ("503", "refuse"):
            raise ValueError("mode is '503' or 'refuse'")
        self.down.until = time.monotonic() + seconds
        self.down.mode = mode
        log.info("event=sandbox_outage seconds=%s mode=%s", seconds, mode)
        if mode == "refuse" and self._site is not None:
            await self._site.stop()
            self.spawn(self._listen_again(seconds))

    async def _listen_again(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        for attempt in range(50):  # the port may be briefly held (TIME_WAIT, a client socket)
            if self._runner is None:
                return
            self._site = web.TCPSite(self._runner, self._host, self._port, reuse_address=True)
            try:
                await self._site.start()
            except OSError as exc:
                log.warning("event=sandbox_relisten_failed attempt=%d error=%s", attempt, exc)
                await asyncio.sleep(0.2)
                continue
            log.info("event=sandbox_outage_over url=%s", self.url)
            return

    # inspection ------------------------------------------------------------------------
    def messages(self, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
        """Top-level messages of a channel, oldest first."""
        return copy.deepcopy(self.ws.top_level(channel))

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The thread's root followed by its replies (empty if there is no such message)."""
        return copy.deepcopy(self.ws.thread(channel, ts))

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        found = self.ws.find(channel, ts)
        return copy.deepcopy(found) if found else None

    def ephemerals(self, user: str) -> list[dict[str, Any]]:
        """Ephemeral messages shown to `user`, oldest first (each with its `channel`)."""
        return [
            {**copy.deepcopy(e.message), "channel": e.channel}
            for e in self.ws.ephemerals
            if e.user == user
        ]

    def open_views(self, user: str) -> list[dict[str, Any]]:
        """The person's modal stack, bottom first."""
        return [copy.deepcopy(v.view) for v in self.ws.stack(user)]

    def view(self, view_id: str) -> dict[str, Any] | None:
        """The latest version of a view, open or closed."""
        stored = self.ws.views.get(view_id)
        return copy.deepcopy(stored.view) if stored else None

    def view_is_open(self, view_id: str) -> bool:
        stored = self.ws.views.get(view_id)
        return stored is not None and not stored.closed

    def view_errors(self, view_id: str) -> dict[str, str]:
        """{block_id: message} shown in the modal ("" = a general error banner)."""
        stored = self.ws.views.get(view_id)
        return dict(stored.errors) if stored else {}

    def home(self, user: str) -> dict[str, Any] | None:
        view_id = self.ws.homes.get(user)
        return self.view(view_id) if view_id else None

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    async def wait_for(
        self,
        predicate: Callable[[SlackSandbox], Any],
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is this helper's point
    ) -> Any:
        """Poll until predicate(sandbox) is truthy and return its value; on timeout raise
        AssertionError with a dump of the channel, ephemerals, views and recent calls.

        A LookupError (KeyError, IndexError) in the predicate counts as "not yet"."""
        deadline = time.monotonic() + timeout
        last_error: LookupError | None = None
        while True:
            version = self._version
            try:
                result = predicate(self)
            except LookupError as exc:  # e.g. messages()[-1] before the first message
                result, last_error = None, exc
            if result:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                note = f" (last error: {last_error!r})" if last_error else ""
                raise AssertionError(f"wait_for timed out after {timeout}s{note}\n{self.dump()}")
            await self.wait_changed(version, min(remaining, 0.1))

    def dump(self) -> str:
        """A readable picture of the workspace, for failing tests."""
        lines = ["-- messages --"]
        for channel in self.ws.channels:
            for m in self.ws.history[channel]:
                who = m.get("user") or m.get("bot_id")
                thread = f" thread={m['thread_ts']}" if m.get("thread_ts") else ""
                lines.append(f"{channel} {m['ts']}{thread} {who}: {m.get('text', '')[:120]!r}")
        lines.append("-- ephemerals --")
        for e in self.ws.ephemerals:
            lines.append(f"{e.channel} to {e.user}: {e.message.get('text', '')[:120]!r}")
        lines.append("-- open views --")
        for user, stack in self.ws.stacks.items():
            for view_id in stack:
                view = self.ws.views[view_id]
                title = (view.view.get("title") or {}).get("text")
                lines.append(f"{user} {view_id} {title!r} errors={view.errors}")
        lines.append("-- last calls --")
        for call in self.calls[-10:]:
            lines.append(f"{call.method} -> {json.dumps(call.response)[:200]}")
        lines.append("-- last deliveries --")
        for d in self.deliveries[-10:]:
            lines.append(json.dumps(d.summary(), default=str)[:300])
        return "\n".join(lines)

    def state(self, user: str) -> dict[str, Any]:
        """What `user` sees: channels with messages and threads, their ephemerals, modals,
        App Home. Served as GET /sandbox/state?user=..."""
        channels = []
        for channel_id, info in self.ws.channels.items():
            top = self.ws.top_level(channel_id)
            threads = {
                m["ts"]: self.ws.thread(channel_id, m["ts"])[1:]
                for m in top
                if m.get("reply_count")
            }
            channels.append({**info, "messages": top, "threads": threads})
        views = [{**v.view, "errors": v.errors} for v in self.ws.stack(user)]
        return copy.deepcopy(
            {
                "version": self._version,
                "user": user,
                "team": {"id": "T_SANDBOX", "name": "sayso sandbox"},
                "people": [p.to_slack() for p in self.ws.people.values()],
                "groups": [g.__dict__ for g in self.ws.groups.values()],
                "channels": channels,
                "ephemerals": self.ephemerals(user),
                "views": views,
                "home": self.home(user),
                "assistant_threads": {
                    ts: pane
                    for (_, ts), pane in self.ws.assistant_threads.items()
                    if pane.get("user") == user
                },
            }
        )
