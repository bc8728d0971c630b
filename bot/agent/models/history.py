"""What a provider may send of a conversation: never empty or whitespace-only text.

Provider APIs refuse blank text (Anthropic: "text content blocks must contain non-whitespace
text"), yet models produce it: Claude often writes "\\n\\n" before a tool call. Blank text is
dropped when a conversation is put on the wire; a conversation whose prompt is blank is refused
before any request is made.
"""

from __future__ import annotations

from bot.agent.errors import ModelError
from bot.agent.messages import Message


class EmptyPromptError(ModelError, ValueError):
    """The conversation ends with a user message without text: there is nothing to answer."""


def is_blank(text: str | None) -> bool:
    return text is None or not text.strip()


def check_prompt(messages: list[Message]) -> None:
    """Raise `EmptyPromptError` when there is no prompt to answer (before any request)."""
    last = next((m for m in reversed(messages) if m.role != "system"), None)
    if last is None:
        raise EmptyPromptError(
            "The prompt is empty: the conversation has no user message. "
            "Say what the agent should do."
        )
    if last.role == "user" and is_blank(last.content):
        raise EmptyPromptError(
            "The prompt is empty: the last user message has no text. Say what the agent should do."
        )


def sendable(messages: list[Message]) -> list[Message]:
    """The conversation as a provider may receive it.

    Raises `EmptyPromptError` when the prompt is blank. Blank system and user messages are
    dropped; an assistant message keeps its tool calls but loses blank text, and is dropped
    when nothing is left. Tool results are kept as they are (every tool call needs one).
    """
    check_prompt(messages)
    out: list[Message] = []
    for m in messages:
        if m.role in ("system", "user"):
            if not is_blank(m.content):
                out.append(m)
        elif m.role == "assistant":
            if not is_blank(m.content):
                out.append(m)
            elif m.tool_calls:
                out.append(m.model_copy(update={"content": None}))
        else:
            out.append(m)
    return out


def answer_text(text: str | None) -> str | None:
    """A model's text as the runtime keeps it: None when it is blank."""
    return None if is_blank(text) else text
