"""Bounding what is sent to the model: the oldest turns of a long conversation are dropped.

Whole exchanges go first (a user message and everything that answered it); a tool call is
never separated from its result. When one exchange alone is over the bound, its oldest model
turns go, keeping the user message and the newest turn. The run keeps its full history: only
the request is shortened, and a note tells the model that earlier turns were dropped.
"""

from __future__ import annotations

import json

from bot.agent.messages import Message

DEFAULT_MAX_HISTORY_CHARS = 48_000

HISTORY_NOTE = (
    "Earlier turns of this conversation were dropped to keep the request within its size "
    "limit. If you need something they said, ask the user."
)


def message_chars(message: Message) -> int:
    """The size of a message as sent: its text and its tool calls' names and arguments."""
    calls = sum(len(c.name) + len(json.dumps(c.arguments)) for c in message.tool_calls)
    return len(message.content or "") + calls


def _units(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped so that an assistant message with tool calls keeps its results."""
    units: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and units and (units[-1][0].tool_calls):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def bound_history(messages: list[Message], max_chars: int) -> tuple[list[Message], int]:
    """The newest part of `messages` within `max_chars`, and how many messages were dropped."""
    units = _units(messages)
    sizes = [sum(message_chars(m) for m in unit) for unit in units]
    total = sum(sizes)
    first = 0
    while total > max_chars:  # drop whole exchanges, oldest first, while another remains
        following = next(
            (i for i in range(first + 1, len(units)) if units[i][0].role == "user"), None
        )
        if following is None:
            break
        total -= sum(sizes[first:following])
        first = following
    kept = list(range(first, len(units)))
    # one exchange left and still too long: drop its oldest turns after the user message
    head = 1 if units[first][0].role == "user" else 0
    while total > max_chars and len(kept) > head + 1:
        total -= sizes[kept.pop(head)]
    shortened = [m for i in kept for m in units[i]]
    return shortened, len(messages) - len(shortened)
