"""The approval API front: `/v1` routes on the bot's aiohttp app, and webhook delivery.

Callers that are not sayso agents (scripts, CI, other agent frameworks) create approval
requests over HTTP; they are decided in Slack through the same decide path as sayso's own.

`ApiFront` (bot/api/front.py) loads on first use, so the pydantic models of bot/api/models.py,
which the Python client shares, import without the server (aiohttp, SQLAlchemy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.api.front import ApiFront


def __getattr__(name: str) -> Any:
    if name == "ApiFront":
        from bot.api.front import ApiFront

        return ApiFront
    raise AttributeError(f"module 'bot.api' has no attribute {name!r}")


__all__ = ["ApiFront"]
