"""Thin listeners: parse the payload, ack, hand over to the service, render the result."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.service import Service
from bot.slack.listeners import actions, commands, events, views


def register(app: AsyncApp, service: Service) -> None:
    commands.register(app, service)
    actions.register(app, service)
    views.register(app, service)
    events.register(app, service)
