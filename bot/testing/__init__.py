"""Test helpers for agents built on sayso: a strict fake of the OpenAI and Anthropic APIs.

    from bot.testing import FakeModelServer

Names are imported lazily so `python -m bot.testing.fake_model` runs cleanly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.testing.fake_model import (
        FakeModelServer,
        Reply,
        chat_completion,
        check_chat_request,
        check_messages_request,
        sample_arguments,
    )

__all__ = [
    "FakeModelServer",
    "Reply",
    "chat_completion",
    "check_chat_request",
    "check_messages_request",
    "sample_arguments",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from bot.testing import fake_model

        return getattr(fake_model, name)
    raise AttributeError(f"module 'bot.testing' has no attribute {name!r}")
