"""Providers never trip on the APIs' own rules, checked against the strict fake over HTTP:
blank text is never sent back, and an empty prompt is refused before any request."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from bot import Agent, Tool, tool
from bot.agent.messages import Message
from bot.agent.models import AnthropicModel, EmptyPromptError, OpenAIChatModel
from bot.agent.models.base import ModelSettings
from bot.testing import FakeModelServer

from .conftest import FAST

WHITESPACE_ERROR = "messages: text content blocks must contain non-whitespace text"


def make_model(provider: str, server: FakeModelServer) -> OpenAIChatModel | AnthropicModel:
    if provider == "openai":
        return OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k")
    return AnthropicModel("claude-test", base_url=server.url, api_key="k")


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def model(
    provider: str, server: FakeModelServer
) -> AsyncIterator[OpenAIChatModel | AnthropicModel]:
    m = make_model(provider, server)
    yield m
    await m.aclose()


def status_tool(calls: list[str]) -> Tool:
    @tool
    def get_status(service: str) -> dict:
        """Current status of a service."""
        calls.append(service)
        return {"service": service, "healthy": True}

    return get_status


async def test_anthropic_refuses_blank_text_blocks_like_the_real_api(
    server: FakeModelServer,
) -> None:
    """The fake itself: the request the old provider sent after a blank text block."""
    body = {
        "model": "claude-test",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "status of api?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "\n\n"},
                    {"type": "tool_use", "id": "t1", "name": "get_status", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        ],
    }
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/v1/messages", json=body)
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": WHITESPACE_ERROR},
    }
    assert server.violations == [WHITESPACE_ERROR]


@pytest.mark.parametrize("blank", ["\n\n", " ", ""])
async def test_blank_text_before_a_tool_call_then_the_next_turn_succeeds(
    provider: str, model: OpenAIChatModel | AnthropicModel, server: FakeModelServer, blank: str
) -> None:
    calls: list[str] = []
    agent = Agent(id="ops", model=model, tools=[status_tool(calls)], model_settings=FAST)
    (cid,) = server.reply(text=blank, tool_calls=[("get_status", {"service": "api"})])
    server.reply(text="api is healthy.")

    result = await agent.run("status of api?")

    assert result.run.status == "completed", result.run.error
    assert result.output == "api is healthy." and calls == ["api"]
    assert server.violations == []
    # the assistant turn went back without its blank text
    if provider == "anthropic":
        assistant = server.requests[1]["messages"][1]
        assert assistant["content"] == [
            {"type": "tool_use", "id": cid, "name": "get_status", "input": {"service": "api"}}
        ]
    else:
        assistant = server.requests[1]["messages"][2]
        assert assistant["content"] is None and assistant["tool_calls"][0]["id"] == cid
    # the run keeps no blank text either
    assert result.run.messages[1].content is None


async def test_blank_messages_in_history_are_not_sent(
    provider: str, model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.reply(text="Hello again.")
    history = [
        Message(role="system", content="  "),
        Message(role="user", content="hi"),
        Message(role="assistant", content=" \n"),  # e.g. a blank answer of an earlier run
        Message(role="user", content="   "),
        Message(role="user", content="are you there?"),
    ]
    response = await model.request(history, [], FAST)
    assert response.message.content == "Hello again."
    assert server.violations == []
    sent = server.requests[0]
    assert "system" not in sent
    if provider == "anthropic":  # consecutive user turns are one message
        assert sent["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "text", "text": "are you there?"},
                ],
            }
        ]
    else:
        assert sent["messages"] == [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": "are you there?"},
        ]


@pytest.mark.parametrize("prompt", ["", "   \n\t"])
async def test_an_empty_prompt_fails_the_run_before_any_request(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer, prompt: str
) -> None:
    agent = Agent(id="ops", model=model, model_settings=FAST)
    result = await agent.run(prompt)
    assert result.run.status == "failed"
    assert result.run.error is not None and "The prompt is empty" in result.run.error
    assert server.requests == []


async def test_an_empty_prompt_is_a_value_error_for_requests_and_streams(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    for messages in ([], [Message(role="system", content="Be brief.")]):
        with pytest.raises(EmptyPromptError, match="no user message"):
            await model.request(messages, [], ModelSettings())
    blank = [Message(role="user", content="hello"), Message(role="user", content=" ")]
    with pytest.raises(ValueError, match="The prompt is empty: the last user message has no text"):
        await model.request(blank, [], ModelSettings())
    with pytest.raises(EmptyPromptError):
        async for _ in model.stream(blank, [], ModelSettings()):
            pass
    assert server.requests == []


async def test_blank_tool_results_are_sent_without_blank_text(server: FakeModelServer) -> None:
    @tool
    def silent() -> str:
        """A tool with an empty result."""
        return ""

    model = make_model("anthropic", server)
    agent = Agent(id="ops", model=model, tools=[silent], model_settings=FAST)
    (cid,) = server.reply(tool_calls=[("silent", {})])
    server.reply(text="Done.")
    result = await agent.run("go")
    assert result.run.status == "completed", result.run.error
    assert server.violations == []
    assert server.requests[1]["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": cid}],
    }
    await model.aclose()
