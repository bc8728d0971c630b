"""A local Slack emulator: the project's fake Slack for end-to-end tests and `sayso demo`.

See bot/sandbox/README.md for the Python API and the web page's test hooks.
"""

from bot.sandbox.core import ApiCall
from bot.sandbox.delivery import Delivery, sign
from bot.sandbox.server import SlackSandbox
from bot.sandbox.state import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    GENERAL,
    TEAM_ID,
    Person,
    UserGroup,
    default_groups,
    default_people,
)

__all__ = [
    "APP_ID",
    "BOT_ID",
    "BOT_USER_ID",
    "GENERAL",
    "TEAM_ID",
    "ApiCall",
    "Delivery",
    "Person",
    "SlackSandbox",
    "UserGroup",
    "default_groups",
    "default_people",
    "sign",
]
