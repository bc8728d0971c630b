"""Wiring: the Slack client, the Bolt app, the service, and the HTTP server around them."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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

from bot.agent.scrub import install_log_scrubbing
from bot.api import ApiFront
from bot.config import ConfigError, Settings, parse_rate_limit
from bot.service import Service, ServiceSettings
from bot.service.limits import RateLimit
from bot.service.policy_file import PolicyError
from bot.service.registry import AgentRegistry
from bot.slack.blocks import home
from bot.slack.directory import SlackDirectory
from bot.slack.home_refresh import HomeRefresher
from bot.slack.listeners import register
from bot.slack.listeners.common import SERVICE_KEY
from bot.slack.presenter import SlackPresenter
from bot.slack.render import card_info, run_info
from bot.slack.startup import NOT_CONNECTED, RefuseUntilKnown, WorkspaceIdentity
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
        max_active_runs=settings.worker_concurrency,
        rate_limit=rate_limit(settings),
        admins=settings.sayso_admins,
        default_channel=settings.sayso_default_channel,
        callback_hosts=settings.sayso_callback_hosts,
    )


def rate_limit(settings: Settings) -> RateLimit | None:
    rate = parse_rate_limit(settings.sayso_rate_limit)
    return RateLimit(*rate) if rate else None


@dataclass
class Bot:
    """One sayso process: Bolt app + service + store."""

    settings: Settings
    app: AsyncApp
    service: Service
    store: Store
    client: AsyncWebClient
    replay_guard: ReplayGuard
    identity: WorkspaceIdentity
    api: ApiFront | None = None
    drives_runs: bool = True
    """False on a front whose runs are driven by workers (`sayso run` with its embedded
    worker, `--no-worker`): it hands runs off and leaves sweeping to the workers."""
    policy_reloaders: list[Callable[[], object]] = field(default_factory=list)
    """Also told on SIGHUP: services of this process that evaluate policies (the embedded
    worker's, on its own event loop)."""

    def reload_policy(self) -> None:
        """SIGHUP: read SAYSO_POLICY again here and in every service of this process."""
        self.service.reload_policy()
        for reload in self.policy_reloaders:
            reload()

    def hand_runs_to_workers(self, wake: Callable[[str], None]) -> None:
        """Make this a front: runs are handed to workers; `wake` wakes a local one."""
        self.drives_runs = False
        self.service.runner.handoff = wake

    async def start(self) -> None:
        """Prepare the database, learn the workspace, start the sweeper (expiry, recovery)."""
        await self.store.upgrade()
        await self.identity.start()  # the process starts even when Slack does not answer
        if not self.service.settings.default_approvers and not self.service.agents.names_approvers:
            log.warning(
                "event=no_approvers_configured: any full member of the workspace may decide; "
                "set SAYSO_APPROVERS or approvers= on agents and tools"
            )
        if self.settings.sayso_policy:
            try:
                asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reload_policy)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                log.warning("event=no_sighup: reload the policy file by restarting")
        if self.drives_runs:
            self.service.start_sweeper(self.settings.sayso_sweep_interval)
        if self.api is not None:
            await self.api.start()

    async def stop(self) -> None:
        if self.api is not None:
            await self.api.stop()
        await self.identity.stop()
        if self.settings.sayso_policy:
            try:
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
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
            database = await self.store.ping()
            slack = self.identity.known
            ok = database and slack
            return web.json_response(
                {
                    "ok": ok,
                    "database": "reachable" if database else "unreachable",
                    "slack": "connected" if slack else NOT_CONNECTED,
                },
                status=200 if ok else 503,
            )

        if slack_events:
            webapp.router.add_post("/slack/events", events)
        webapp.router.add_get("/healthz", healthz)
        if self.api is not None:
            self.api.add_routes(webapp)  # /v1: the approval API
        return webapp


_CHARSETS = ("utf-8", "utf8", "us-ascii", "ascii")
"""Slack sends UTF-8; a body declared in any other charset is not Slack's."""


async def _bolt_request(request: web.Request) -> AsyncBoltRequest | None:
    """The request for Bolt, or None when Slack would never send it (a body that is not UTF-8,
    a timestamp that is not a number, a body that is not a JSON object, fields of the wrong
    type): Bolt would raise on those and answer 500."""
    raw = await request.read()  # bodies over MAX_BODY_BYTES get 413 here
    reason = _undecodable(request, raw)
    bolt_request: AsyncBoltRequest | None = None
    if reason is None:
        try:
            int(request.headers.get("X-Slack-Request-Timestamp", "0"))
            bolt_request = AsyncBoltRequest(
                body=raw.decode("utf-8"),
                query=request.query_string,
                headers=request.headers,  # type: ignore[arg-type]
            )
        except (ValueError, TypeError, AttributeError, LookupError):
            reason = "unparsable"
    if reason is None and (bolt_request is None or not _slack_shaped(bolt_request.body)):
        reason = "shape"
    if reason is not None:
        log.info("event=malformed_request reason=%s bytes=%d", reason, len(raw))
        return None
    return bolt_request


def _undecodable(request: web.Request, raw: bytes) -> str | None:
    """Why the body cannot be Slack's text (a charset other than UTF-8, bytes that are not
    UTF-8), or None."""
    try:
        charset = (request.charset or "utf-8").lower()
    except (ValueError, LookupError):
        return "charset"
    if charset not in _CHARSETS:
        return "charset"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not_utf8"
    return None


_OBJECT_FIELDS = ("user", "view", "container", "message", "event", "state")
_VIEW_PAYLOADS = ("view_submission", "view_closed")


def _slack_shaped(body: Any) -> bool:
    """Slack's top-level fields have fixed JSON types, which Bolt relies on (it raises
    otherwise): an object, a string `type`, objects where Slack sends objects, a view with
    its `type`, actions with their `action_id`."""
    if not isinstance(body, dict) or not isinstance(body.get("type", ""), str):
        return False
    if any(k in body and not isinstance(body[k], dict) for k in _OBJECT_FIELDS):
        return False
    if any(body.get(k) is not None and not isinstance(body[k], dict) for k in ("team", "channel")):
        return False
    if not _strings(body.get("user", {}), "id") or not _strings(body, "callback_id"):
        return False
    view = body.get("view")
    if view is not None:
        if body.get("type") in _VIEW_PAYLOADS and not isinstance(view.get("type"), str):
            return False
        if not _strings(view, "type", "id", "callback_id", "private_metadata", "external_id"):
            return False
    actions = body.get("actions", [])
    return isinstance(actions, list) and all(
        isinstance(a, dict) and isinstance(a.get("action_id"), str) and _strings(a, "block_id")
        for a in actions
    )


def _strings(value: dict[str, Any], *keys: str) -> bool:
    """Are these keys, where present, strings?"""
    return all(value.get(k) is None or isinstance(value[k], str) for k in keys)


SLACK_WINDOW = 300.0
"""Slack's (and Bolt's) acceptance window: timestamps within ±5 minutes of now."""
FUTURE_SKEW = 60.0
"""How far ahead of our clock a request's timestamp may be (clock drift), at most."""


class ReplayGuard:
    """Signatures seen while their timestamps are still accepted, in memory: answering Slack
    must not wait for the database. A signature is remembered until its timestamp has left the
    acceptance window (so a request stamped in the future is remembered longer), and
    timestamps further ahead than `future_skew` are refused outright. Replays that reach
    another replica are harmless: decisions are conditional writes, events are deduplicated by
    event_id, and slash commands by signature in the store once acked (listeners/commands.py).
    """

    def __init__(
        self,
        window: float = SLACK_WINDOW,
        limit: int = 100_000,
        *,
        future_skew: float = FUTURE_SKEW,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window = window
        self.limit = limit
        self.future_skew = future_skew
        self.clock = clock
        self._seen: dict[str, float] = {}

    def too_far_ahead(self, timestamp: float) -> bool:
        """Is this timestamp further in the future than clock drift explains?"""
        return timestamp - self.clock() > self.future_skew

    def first(self, signature: str, timestamp: float | None = None) -> bool:
        """True the first time `signature` (of a request stamped `timestamp`) is seen."""
        now = self.clock()
        stamped = now if timestamp is None else timestamp
        if len(self._seen) >= self.limit:
            self._seen = {s: t for s, t in self._seen.items() if t > now}
            while len(self._seen) >= self.limit:  # still full: forget the oldest
                self._seen.pop(next(iter(self._seen)))
        forget_at = self._seen.get(signature)
        if forget_at is not None and now < forget_at:
            return False
        self._seen[signature] = max(stamped, now) + self.window
        return True


def _timestamp(req: AsyncBoltRequest) -> float | None:
    raw = (req.headers.get("x-slack-request-timestamp") or [""])[0]
    try:
        return float(raw)
    except ValueError:
        return None


def drop_replays(guard: ReplayGuard) -> Callable[..., Awaitable[BoltResponse | None]]:
    """Bolt middleware (after the signature check): a request stamped too far in the future is
    refused, and a signature seen before is a replay of a request already handled, so it is
    refused too (a Slack retry of it is simply acked)."""

    async def middleware(
        req: AsyncBoltRequest, next: Callable[[], Awaitable[BoltResponse | None]]
    ) -> BoltResponse | None:
        signature = (req.headers.get("x-slack-signature") or [""])[0]
        if req.mode == "socket_mode" or not signature:
            return await next()
        timestamp = _timestamp(req)
        if timestamp is not None and guard.too_far_ahead(timestamp):
            guard.first(signature, timestamp)  # its replays stay refused once it is in range
            log.warning("event=future_timestamp ahead_s=%d", timestamp - guard.clock())
            return BoltResponse(status=401, body="Request timestamp is in the future.")
        if guard.first(signature, timestamp):
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


def build_store(settings: Settings) -> Store:
    return Store(
        settings.database_url,
        replica_id=settings.sayso_replica_id,
        lease_seconds=settings.sayso_lease_seconds,
        encryption_keys=settings.encryption_keys(),
    )


def build_service(
    settings: Settings, agents: AgentRegistry, store: Store, client: AsyncWebClient
) -> Service:
    """The service with its Slack presenter and directory (a front's, or a worker's)."""
    directory = SlackDirectory(client)
    service: Service | None = None

    async def home_of(user_id: str) -> dict[str, Any]:
        assert service is not None
        inbox = await service.inbox(user_id)
        return home.home_view(
            [card_info(request, run, agents) for request, run in inbox.pending],
            inbox.total,
            [run_info(r) for r in inbox.recent_runs],
            user_id=user_id,
            total_is_lower_bound=inbox.total_is_lower_bound,
        )

    async def publish(user_id: str, view: dict[str, Any]) -> None:
        await client.views_publish(user_id=user_id, view=view)

    homes = HomeRefresher(home_of, publish)
    presenter = SlackPresenter(client, agents, home_refresher=homes.refresh, closing=homes.close)
    service = Service(store, agents, directory, presenter, service_settings(settings))
    if settings.sayso_policy:
        try:
            service.load_policy(settings.sayso_policy)
        except PolicyError as exc:
            raise ConfigError(f"SAYSO_POLICY is not usable: {exc}") from None
    return service


def build_bot(settings: Settings, agents: AgentRegistry, *, store: Store | None = None) -> Bot:
    install_log_scrubbing()  # whoever embeds the bot, its log lines carry no secrets
    client = web_client(settings)
    store = store or build_store(settings)
    service = build_service(settings, agents, store, client)
    identity = WorkspaceIdentity(client, service)
    app = AsyncApp(
        client=client,
        signing_secret=settings.secret("slack_signing_secret") or "socket-mode-has-no-secret",
        request_verification_enabled=True,
        before_authorize=RefuseUntilKnown(identity),  # after the signature check
        logger=logging.getLogger("sayso.bolt"),
    )
    replay_guard = ReplayGuard()
    app.use(drop_replays(replay_guard))
    app.use(ProvideService(service))
    register(app)

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("event=listener_error type=%s error=%s", body.get("type"), error)

    api = ApiFront(service.api, retry_interval=min(settings.sayso_sweep_interval, 1.0))
    return Bot(
        settings=settings,
        app=app,
        service=service,
        store=store,
        client=client,
        replay_guard=replay_guard,
        identity=identity,
        api=api,
    )
