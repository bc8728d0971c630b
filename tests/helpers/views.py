"""Reading the modals sayso opens: a click opens a loading view at once, then fills it in."""

from __future__ import annotations

from typing import Any

from bot.sandbox import SlackSandbox
from bot.slack.ids import CallbackId


def filled_views(sandbox: SlackSandbox, user: str) -> list[dict[str, Any]]:
    """The user's open views once filled in (not the loading or refusal notice)."""
    return [v for v in sandbox.open_views(user) if v.get("callback_id") != CallbackId.NOTICE]
