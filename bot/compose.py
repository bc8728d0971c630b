"""The composition root: the store, the service and the Slack Web client, built in one place
for `sayso run` (a front, with or without its embedded worker), `sayso worker`, the MCP server
and the command line. Nothing else builds them, and nothing needs the Bolt app to get a store.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import ConfigError, Settings, parse_rate_limit
from bot.service import Service, ServiceSettings
from bot.service.policy.file import PolicyError
from bot.service.registry import AgentRegistry
from bot.service.start_gate import RateLimit
from store import Store

if TYPE_CHECKING:
    from bot.front import Bot
    from bot.mcp.http import McpHttp
    from bot.slack.outbox import OutboxDispatcher
    from bot.slack.presenter import SlackPresenter
    from store.outbox import Outbox

log = logging.getLogger("sayso")


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


def rate_limit(settings: Settings) -> RateLimit | None:
    rate = parse_rate_limit(settings.sayso_rate_limit)
    return RateLimit(*rate) if rate else None


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


def build_store(settings: Settings) -> Store:
    return Store(
        settings.database_url,
        replica_id=settings.sayso_replica_id,
        lease_seconds=settings.sayso_lease_seconds,
        encryption_keys=settings.encryption_keys(),
    )


def build_outbox(store: Store) -> Outbox:
    """The process's one outbox repository (every Slack write is a row of it)."""
    return store.outbox()


def build_dispatcher(
    store: Store,
    outbox: Outbox,
    client: AsyncWebClient,
    presenter: SlackPresenter | None = None,
) -> OutboxDispatcher:
    """The process's one outbox dispatcher (one of them sends at a time: the sender lease).
    Its `stats` are the metrics: pending, oldest_seconds, ratelimited by method."""
    from bot.slack.outbox import OutboxDispatcher
    from bot.slack.posted import PostedRecorder

    posted = PostedRecorder(store, presenter)
    return OutboxDispatcher(outbox, client, owner=store.replica_id, on_posted=posted)


def build_service(
    settings: Settings,
    agents: AgentRegistry,
    store: Store,
    client: AsyncWebClient,
    presenter: SlackPresenter | None = None,
) -> Service:
    """The service with its Slack presenter and directory (a front's, or a worker's)."""
    from bot.slack.directory import SlackDirectory
    from bot.slack.presenter import SlackPresenter

    presenter = presenter or SlackPresenter(client, agents, build_outbox(store))
    service = Service(store, agents, SlackDirectory(client), presenter, service_settings(settings))
    presenter.attach(service)  # App Home reads the inbox through the facade
    if settings.sayso_policy:
        try:
            service.load_policy(settings.sayso_policy)
        except PolicyError as exc:
            raise ConfigError(f"SAYSO_POLICY is not usable: {exc}") from None
    return service


def mcp_front(service: Service) -> McpHttp | None:
    """/mcp, when the optional `mcp` SDK is installed (`pip install 'sayso[mcp]'`)."""
    try:
        from bot.mcp.http import McpHttp
    except ImportError:
        log.info("event=mcp_unavailable: install sayso[mcp] to serve /mcp")
        return None
    return McpHttp(service.api)


def build_bot(settings: Settings, agents: AgentRegistry, *, store: Store | None = None) -> Bot:
    """A front: the Bolt app, the service, the /v1 API and the HTTP routes around them."""
    from bot.agent.scrub import install_log_scrubbing
    from bot.api.front import ApiFront
    from bot.front import Bot
    from bot.slack.app import build_app
    from bot.slack.listeners.common import use_outbox
    from bot.slack.presenter import SlackPresenter
    from bot.slack.startup import WorkspaceIdentity

    install_log_scrubbing()  # whoever embeds the bot, its log lines carry no secrets
    client = web_client(settings)
    store = store or build_store(settings)
    outbox = build_outbox(store)
    presenter = SlackPresenter(client, agents, outbox)
    service = build_service(settings, agents, store, client, presenter)
    use_outbox(client, outbox)  # listeners' ephemerals are rows too
    identity = WorkspaceIdentity(client, service)
    app, replay_guard = build_app(settings, client, service, identity, presenter.homes)
    api = ApiFront(
        service.api,
        retry_interval=min(settings.sayso_sweep_interval, 1.0),
        mcp=mcp_front(service),
    )
    dispatcher = build_dispatcher(store, outbox, client, presenter)
    return Bot(
        settings=settings,
        app=app,
        service=service,
        store=store,
        client=client,
        replay_guard=replay_guard,
        identity=identity,
        api=api,
        homes=presenter.homes,
        dispatcher=dispatcher,
    )
