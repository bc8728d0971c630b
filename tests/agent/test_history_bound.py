"""`Agent(max_history_chars=...)`: the oldest turns are dropped, never half of a tool call."""

from __future__ import annotations

import pytest

from bot.agent import Agent, Message, ToolCall
from bot.agent.history import bound_history, message_chars


def user(text: str) -> Message:
    return Message(role="user", content=text)


def answer(text: str) -> Message:
    return Message(role="assistant", content=text)


def call(call_id: str, size: int) -> list[Message]:
    asked = Message(
        role="assistant", tool_calls=[ToolCall(id=call_id, name="search", arguments={"q": "x"})]
    )
    return [asked, Message(role="tool", tool_call_id=call_id, name="search", content="r" * size)]


def chars(messages: list[Message]) -> int:
    return sum(message_chars(m) for m in messages)


def test_a_short_conversation_is_sent_whole() -> None:
    messages = [user("hi"), answer("hello"), user("and?")]
    assert bound_history(messages, 1_000) == (messages, 0)


def test_whole_exchanges_go_first_and_the_newest_stays() -> None:
    messages = [
        user("a" * 500),
        *call("c1", 2_000),
        answer("b" * 500),
        user("c" * 500),
        answer("d" * 500),
        user("latest"),
    ]
    kept, dropped = bound_history(messages, 2_000)
    assert kept == messages[4:] and dropped == 4
    assert chars(kept) <= 2_000 and kept[0].role == "user"


def test_one_long_exchange_loses_its_oldest_turns_but_keeps_calls_with_results() -> None:
    messages = [user("do it"), *call("c1", 3_000), *call("c2", 3_000), *call("c3", 500)]
    kept, dropped = bound_history(messages, 2_000)
    assert [m.role for m in kept] == ["user", "assistant", "tool"]
    assert kept[1].tool_calls[0].id == "c3" and kept[2].tool_call_id == "c3"
    assert dropped == 4


def test_the_bound_is_checked() -> None:
    with pytest.raises(ValueError, match="max_history_chars"):
        Agent(id="a", model="scripted:echo", max_history_chars=10)
    with pytest.raises(TypeError, match="allowed_users"):
        Agent(id="a", model="scripted:echo", allowed_users="U1")
