"""Wiring: the Slack client, the Bolt app, the service, and the HTTP server around them."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.api import ApiFront
from bot.config import Settings
from bot.service import Service, ServiceSettings
from bot.service.registry import AgentRegistry
from bot.slack.blocks import home
from bot.slack.directory import SlackDirectory
from bot.slack.listeners import register
from bot.slack.listeners.common import SERVICE_KEY
from bot.slack.presenter import SlackPresenter
from bot.slack.render import card_info, run_info
from store import Store

log = logging.getLogger("sayso.slack")

MAX_BODY_BYTES = 1024 * 1024  # Slack's payloads are far smaller; bigger bodies get 413


def web_client(settings: Settings) -> AsyncWebClient:
    """Slack Web API client with slack-sdk's retry handlers (429 + Retry-After, connections)."""
    return AsyncWebClient(
        token=settings.secret("slack_bot_token"),
        base_url=settings.slack_api_url,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
        ],
    )


def service_settings(settings: Settings) -> ServiceSettings:
    return ServiceSettings(
        default_approvers=settings.sayso_approvers,
        approval_ttl=settings.sayso_approval_ttl,
        remind_after=settings.sayso_remind_after,
        lease_seconds=settings.sayso_lease_seconds,
        retention=settings.sayso_retention,
        max_active_runs=settings.sayso_max_active_runs,
        default_channel=settings.sayso_default_channel,
    )


@dataclass
class Bot:
    """One sayso process: Bolt app + service + store."""

    settings: Settings
    app: AsyncApp
    service: Service
    store: Store
    client: AsyncWebClient
    api: ApiFront | None = None

    async def start(self) -> None:
        """Prepare the database, learn the workspace, start the sweeper (expiry, recovery)."""
        await self.store.upgrade()
        try:
            auth = await self.client.auth_test()
            self.service.workspace_team_id = auth.get("team_id")
            log.info(
                "event=connected team=%s bot_user=%s", auth.get("team_id"), auth.get("user_id")
            )
        except Exception as exc:
            log.warning("event=auth_test_failed error=%s", exc)
        if not self.service.settings.default_approvers and not self.service.agents.names_approvers:
            log.warning(
                "event=no_approvers_configured: any full member of the workspace may decide; "
                "set SAYSO_APPROVERS or approvers= on agents and tools"
            )
        self.service.start_sweeper(self.settings.sayso_sweep_interval)
        if self.api is not None:
            await self.api.start()

    async def stop(self) -> None:
        if self.api is not None:
            await self.api.stop()
        await self.service.close()
        await self.store.close()

    def web_app(self, *, slack_events: bool = True) -> web.Application:
        """POST /slack/events (signature always checked), GET /healthz and the /v1 API.

        In Socket Mode (`slack_events=False`) Slack's events come over the socket: the HTTP
        port serves /healthz and /v1 only."""
        webapp = web.Application(client_max_size=MAX_BODY_BYTES)

        async def events(request: web.Request) -> web.Response:
            bolt_request = await _bolt_request(request)
            if bolt_request is None:
                return web.Response(status=400, text="Malformed Slack request.")
            bolt_response = await self.app.async_dispatch(bolt_request)
            return await to_aiohttp_response(bolt_response)

        async def healthz(request: web.Request) -> web.Response:
            ok = await self.store.ping()
            return web.json_response(
                {"ok": ok, "database": "reachable" if ok else "unreachable"},
                status=200 if ok else 503,
            )

        if slack_events:
            webapp.router.add_post("/slack/events", events)
        webapp.router.add_get("/healthz", healthz)
        if self.api is not None:
            self.api.add_routes(webapp)  # /v1: the approval API
        return webapp


async def _bolt_request(request: web.Request) -> AsyncBoltRequest | None:
    """The request for Bolt, or None when Slack would never send it (a timestamp that is not
    a number, a body that is not a JSON object): Bolt would raise on those and answer 500."""
    body = await request.text()  # bodies over MAX_BODY_BYTES get 413 here
    try:
        int(request.headers.get("X-Slack-Request-Timestamp", "0"))
        bolt_request = AsyncBoltRequest(
            body=body,
            query=request.query_string,
            headers=request.headers,  # type: ignore[arg-type]
        )
    except (ValueError, TypeError, AttributeError, LookupError):
        bolt_request = None
    if bolt_request is None or not _slack_shaped(bolt_request.body):
        log.info("event=malformed_request bytes=%d", len(body))
        return None
    return bolt_request


_OBJECT_FIELDS = ("user", "view", "container", "message", "event", "state")


def _slack_shaped(body: Any) -> bool:
    """Slack's top-level fields have fixed JSON types, which Bolt relies on (it raises
    otherwise): an object, a string `type`, objects where Slack sends objects."""
    if not isinstance(body, dict) or not isinstance(body.get("type", ""), str):
        return False
    if any(k in body and not isinstance(body[k], dict) for k in _OBJECT_FIELDS):
        return False
    if any(body.get(k) is not None and not isinstance(body[k], dict) for k in ("team", "channel")):
        return False
    actions = body.get("actions", [])
    return isinstance(actions, list) and all(isinstance(a, dict) for a in actions)


class ReplayGuard:
    """Signatures seen in Slack's 5-minute window, in memory: answering Slack must not wait
    for the database. Replays that reach another replica are harmless: decisions are
    conditional writes, events are deduplicated by event_id, and slash commands by signature
    in the store once acked (see listeners/commands.py)."""

    def __init__(self, window: float = 300.0, limit: int = 100_000) -> None:
        self.window = window
        self.limit = limit
        self._seen: dict[str, float] = {}

    def first(self, signature: str) -> bool:
        now = time.monotonic()
        if len(self._seen) >= self.limit:
            cutoff = now - self.window
            self._seen = {s: t for s, t in self._seen.items() if t > cutoff}
            while len(self._seen) >= self.limit:  # still full: forget the oldest
                self._seen.pop(next(iter(self._seen)))
        seen = self._seen.get(signature)
        if seen is not None and now - seen < self.window:
            return False
        self._seen[signature] = now
        return True


def drop_replays(guard: ReplayGuard) -> Callable[..., Awaitable[BoltResponse | None]]:
    """Bolt middleware (after the signature check): a signature seen before is a replay of a
    request already handled, so it is refused (a Slack retry of it is simply acked)."""

    async def middleware(
        req: AsyncBoltRequest, next: Callable[[], Awaitable[BoltResponse | None]]
    ) -> BoltResponse | None:
        signature = (req.headers.get("x-slack-signature") or [""])[0]
        if req.mode == "socket_mode" or not signature or guard.first(signature):
            return await next()
        retry = bool(req.headers.get("x-slack-retry-num"))
        log.warning("event=replayed_request retry=%s", retry)
        return BoltResponse(status=200 if retry else 409, body="" if retry else "Replayed request.")

    return middleware


class ProvideService(AsyncMiddleware):
    """Bolt middleware: puts the Service in every request's context, where listeners find it
    with `service_of(context)` (as Netflix Dispatch hands its listeners a database session)."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        req.context[SERVICE_KEY] = self.service
        return await next()


def build_bot(settings: Settings, agents: AgentRegistry, *, store: Store | None = None) -> Bot:
    client = web_client(settings)
    store = store or Store(
        settings.database_url,
        replica_id=settings.sayso_replica_id,
        lease_seconds=settings.sayso_lease_seconds,
    )
    directory = SlackDirectory(client)
    service: Service | None = None

    async def refresh_home(user_id: str) -> None:
        assert service is not None
        inbox = await service.inbox(user_id)
        view = home.home_view(
            [card_info(request, run, agents) for request, run in inbox.pending],
            inbox.total,
            [run_info(r) for r in inbox.recent_runs],
            user_id=user_id,
            total_is_lower_bound=inbox.total_is_lower_bound,
        )
        await client.views_publish(user_id=user_id, view=view)

    presenter = SlackPresenter(client, agents, home_refresher=refresh_home)
    service = Service(store, agents, directory, presenter, service_settings(settings))
    app = AsyncApp(
        client=client,
        signing_secret=settings.secret("slack_signing_secret") or "socket-mode-has-no-secret",
        request_verification_enabled=True,
        logger=logging.getLogger("sayso.bolt"),
    )
    app.use(drop_replays(ReplayGuard()))
    app.use(ProvideService(service))
    register(app)

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("event=listener_error type=%s error=%s", body.get("type"), error)

    api = ApiFront(service.api, retry_interval=min(settings.sayso_sweep_interval, 1.0))
    return Bot(settings=settings, app=app, service=service, store=store, client=client, api=api)
