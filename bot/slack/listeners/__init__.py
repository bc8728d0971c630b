"""Thin listeners: parse the payload, ack, hand over to the service, render the result.

Every listener is a module-level function taking Bolt's arguments by name; it reaches the
Service through `service_of(context)`, put there by the middleware
`bot.slack.middleware.ProvideService`, and the approval request the interaction names through
`request_at_hand(context)` (`bot.slack.request_at_hand.ProvideRequest`). Every button naming a
request takes the same first step (`clicks.on_request_click`: ack, the loading modal, the
request read once, a button from another card refused).
"""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack.listeners import actions, assistant, commands, events, views


def register(app: AsyncApp) -> None:
    commands.register(app)
    actions.register(app)
    views.register(app)
    assistant.register(app)  # before events: messages in the pane go to the assistant
    events.register(app)
