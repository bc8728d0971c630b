"""Streaming at the model layer, against the fake's SSE streams over HTTP: text deltas as they
come, then exactly the response the non-streamed request gives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

import pytest

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse
from bot.agent.models import (
    AnthropicModel,
    FinalResponse,
    ModelSettings,
    OpenAIChatModel,
    ScriptedModel,
    StreamingModel,
    TextDelta,
    ToolSpec,
    respond,
)
from bot.agent.models.anthropic_stream import EventAssembler
from bot.testing import FakeModelServer

from .conftest import FAST

PROMPT = [Message(role="system", content="Be brief."), Message(role="user", content="status?")]
TOOLS = [
    ToolSpec(
        name="get_status",
        description="Current status of a service.",
        parameters={
            "type": "object",
            "properties": {"service": {"type": "string"}, "region": {"type": "string"}},
            "required": ["service"],
        },
    )
]
TEXT = "Let me check the status of **api** in both regions for you."
USAGE = {"prompt_tokens": 31, "completion_tokens": 58}
CALLS = [
    ("get_status", {"service": "api", "region": "eu-west-1"}, "call_eu"),
    ("get_status", {"service": "api", "region": "us-east-1"}, "call_us"),
]


def make_model(provider: str, server: FakeModelServer) -> OpenAIChatModel | AnthropicModel:
    if provider == "openai":
        return OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k")
    return AnthropicModel("claude-test", base_url=server.url, api_key="k")


@pytest.fixture(params=["openai", "anthropic"])
async def model(
    request: pytest.FixtureRequest, server: FakeModelServer
) -> AsyncIterator[OpenAIChatModel | AnthropicModel]:
    m = make_model(str(request.param), server)
    yield m
    await m.aclose()


async def streamed(
    model: StreamingModel, settings: ModelSettings = FAST
) -> tuple[list[str], ModelResponse]:
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for event in model.stream(PROMPT, TOOLS, settings):
        assert not final, "the response is the last event"
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        else:
            assert isinstance(event, FinalResponse)
            final.append(event.response)
    (response,) = final
    return deltas, response


QueueReply = Callable[[FakeModelServer], object]
REPLIES: dict[str, QueueReply] = {
    "text": lambda s: s.reply(text=TEXT, usage=USAGE),
    "text then tool calls": lambda s: s.reply(text=TEXT, tool_calls=CALLS, usage=USAGE),
    "tool call only": lambda s: s.reply(tool_calls=CALLS[:1], usage=USAGE),
    "blank text then a tool call": lambda s: s.reply(text="\n\n", tool_calls=CALLS, usage=USAGE),
    "cut-off text": lambda s: s.reply(text=TEXT, truncated=True, usage=USAGE),
}


@pytest.mark.parametrize("case", list(REPLIES))
async def test_a_streamed_response_equals_the_non_streamed_one(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer, case: str
) -> None:
    REPLIES[case](server)
    expected = await model.request(PROMPT, TOOLS, FAST)
    REPLIES[case](server)
    deltas, response = await streamed(model)

    assert response == expected
    assert "".join(deltas) == (expected.message.content or "")
    if expected.message.content:
        assert len(deltas) > 5  # it really streamed, piece by piece
    assert server.requests[1]["stream"] is True and "stream" not in server.requests[0]
    assert server.violations == []


async def test_text_then_a_tool_call_streams_the_text_and_assembles_the_calls(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.reply(text=TEXT, tool_calls=CALLS, usage=USAGE)
    deltas, response = await streamed(model)
    assert "".join(deltas) == TEXT
    assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == CALLS_SEEN
    assert response.usage.model_dump() == {"requests": 1, "input_tokens": 31, "output_tokens": 58}
    assert not response.truncated


CALLS_SEEN = [(cid, name, args) for name, args, cid in CALLS]


async def test_blank_text_before_a_tool_call_is_never_streamed(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.reply(text=" \n\n", tool_calls=CALLS[:1])
    deltas, response = await streamed(model)
    assert deltas == [] and response.message.content is None
    assert len(response.message.tool_calls) == 1


async def test_a_tool_call_cut_off_in_a_stream_is_retried_then_whole(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.reply(text=TEXT, tool_calls=[("get_status", '{"service": "ap')], truncated=True)
    server.reply(text=TEXT, tool_calls=CALLS[:1])
    deltas, response = await streamed(model, replace(FAST, max_tokens=300))

    assert "".join(deltas) == TEXT  # the retry is not streamed: no text twice
    assert [c.arguments for c in response.message.tool_calls] == [CALLS[0][1]]
    assert not response.truncated and response.usage.requests == 2
    assert [(r.get("stream"), r["max_tokens"]) for r in server.requests] == [
        (True, 300),
        (None, 600),
    ]


async def test_a_tool_call_cut_off_twice_in_a_stream_fails_clearly(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    for _ in range(2):
        server.reply(tool_calls=[("get_status", '{"service": "ap')], truncated=True)
    with pytest.raises(ModelError, match="tool call was cut off at 600 tokens") as caught:
        await streamed(model, replace(FAST, max_tokens=300))
    assert not caught.value.retryable


async def test_a_stream_that_breaks_off_is_a_retryable_error(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.reply(text=TEXT, disconnect_after=4)
    deltas: list[str] = []
    with pytest.raises(ModelError) as caught:
        async for event in model.stream(PROMPT, TOOLS, FAST):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
    assert caught.value.retryable
    assert TEXT.startswith("".join(deltas)) and "".join(deltas) != TEXT


async def test_an_http_error_before_the_stream_is_classified_like_a_request(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.fail(status=429, retry_after=0.5)
    with pytest.raises(ModelError) as caught:
        await streamed(model)
    assert caught.value.retryable and caught.value.retry_after == 0.5
    server.fail(status=400, message="bad request")
    with pytest.raises(ModelError, match="HTTP 400") as refused:
        await streamed(model)
    assert not refused.value.retryable


async def test_respond_streams_text_through_a_callback(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    pieces: list[str] = []

    async def on_text(text: str) -> None:
        pieces.append(text)

    server.reply(text=TEXT)
    response = await respond(model, PROMPT, TOOLS, FAST, on_text)
    assert "".join(pieces) == TEXT == response.message.content
    server.reply(text=TEXT)
    assert (await respond(model, PROMPT, TOOLS, FAST)).message.content == TEXT
    assert "stream" not in server.requests[-1]


async def test_respond_falls_back_to_a_request_for_models_that_do_not_stream() -> None:
    class Plain:
        name = "plain"

        async def request(
            self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
        ) -> ModelResponse:
            return ModelResponse(message=Message(role="assistant", content="plain answer"))

    seen: list[str] = []
    on_text: Callable[[str], Awaitable[None]] = _collect(seen)
    response = await respond(Plain(), PROMPT, TOOLS, FAST, on_text)
    assert response.message.content == "plain answer" and seen == []


def _collect(into: list[str]) -> Callable[[str], Awaitable[None]]:
    async def on_text(text: str) -> None:
        into.append(text)

    return on_text


async def test_scripted_models_stream_word_by_word() -> None:
    model = ScriptedModel(["**Deployed** v2 to staging.\n\n| env | version |"])
    assert isinstance(model, StreamingModel)
    deltas, response = await streamed(model)
    assert deltas[:2] == ["**Deployed** ", "v2 "]
    assert "".join(deltas) == response.message.content


async def test_a_provider_that_does_not_stream_is_a_clear_error() -> None:
    """An OpenAI-compatible server that ignores `stream: true` and answers JSON."""
    async with FakeModelServer(streaming=False) as server:
        model = make_model("openai", server)
        server.reply(text=TEXT)
        with pytest.raises(ModelError, match="instead of server-sent events") as caught:
            await streamed(model)
        assert not caught.value.retryable
        server.reply(text=TEXT)
        assert (await model.request(PROMPT, TOOLS, FAST)).message.content == TEXT
        await model.aclose()


@pytest.mark.parametrize(
    ("kind", "retryable"), [("overloaded_error", True), ("invalid_request_error", False)]
)
def test_an_anthropic_error_event_mid_stream_is_a_model_error(kind: str, retryable: bool) -> None:
    events = EventAssembler()
    events.add({"type": "message_start", "message": {"content": [], "usage": {}}})
    with pytest.raises(ModelError, match=f"mid-stream \\({kind}\\): boom") as caught:
        events.add({"type": "error", "error": {"type": kind, "message": "boom"}})
    assert caught.value.retryable is retryable
