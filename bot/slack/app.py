"""The Bolt app: its middleware (signature check, workspace known, replay guard, the service and
the approval request an interaction names in the context, the durable intake) and its
listeners. The store, the service and the client
come from bot/compose.py.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.service import Service
from bot.slack.home_refresh import HomeRefresher
from bot.slack.intake import RecordIntake, use_intake
from bot.slack.listeners import register
from bot.slack.middleware import ProvideService, ReplayGuard, drop_replays
from bot.slack.request_at_hand import ProvideRequest
from bot.slack.startup import RefuseUntilKnown, WorkspaceIdentity

log = logging.getLogger("sayso.slack")


def build_app(
    settings: Settings,
    client: AsyncWebClient,
    service: Service,
    identity: WorkspaceIdentity,
    homes: HomeRefresher | None = None,
) -> tuple[AsyncApp, ReplayGuard]:
    """The Bolt app with every listener registered, and its replay guard."""
    app = AsyncApp(
        client=client,
        signing_secret=settings.secret("slack_signing_secret") or "socket-mode-has-no-secret",
        request_verification_enabled=True,
        before_authorize=RefuseUntilKnown(identity),  # after the signature check
        logger=logging.getLogger("sayso.bolt"),
    )
    identity.share_with(app)  # one auth.test for the process, not one per early request
    replay_guard = ReplayGuard()
    app.use(drop_replays(replay_guard))
    app.use(ProvideService(service, homes))
    app.use(ProvideRequest())  # read after the ack, once (bot/slack/request_at_hand.py)
    store = service.store  # a state-changing interaction is a row before it is acked
    recorder = RecordIntake.on(store, settings.sayso_lease_seconds)
    use_intake(app, recorder)
    register(app)

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("event=listener_error type=%s error=%s", body.get("type"), error)

    return app, replay_guard
