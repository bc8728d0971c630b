"""Answers cut off at the output limit (`finish_reason: "length"`, `stop_reason: "max_tokens"`),
against the strict fake over HTTP: cut-off text is marked, a cut-off tool call never runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from bot import Agent, Tool, tool
from bot.agent.messages import Message
from bot.agent.models import AnthropicModel, OpenAIChatModel
from bot.agent.models.truncation import MAX_TOKENS_CEILING
from bot.testing import FakeModelServer

from .conftest import FAST

LIMITED = replace(FAST, max_tokens=1000)
CUT_OFF_ARGS = '{"service": "api", "version": "v'  # Anthropic reads it as {..., "version": "v"}
WHOLE_ARGS = {"service": "api", "version": "v2.4.1"}


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


def finish_reason_of(model: OpenAIChatModel | AnthropicModel) -> str:
    return "length" if isinstance(model, OpenAIChatModel) else "max_tokens"


class Rollouts:
    """A rollout tool that counts how often its body ran."""

    def __init__(self, *, approval: bool = False) -> None:
        self.runs: list[dict[str, str]] = []

        @tool(require_approval=approval)
        def rollout(service: str, version: str) -> str:
            """Roll a version of a service out."""
            self.runs.append({"service": service, "version": version})
            return f"{service} is on {version}"

        self.tool: Tool = rollout


async def test_a_cut_off_text_answer_is_kept_and_marked(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    agent = Agent(id="ops", model=model, model_settings=LIMITED)
    server.reply(text="The three causes are: first, the", truncated=True)
    result = await agent.run("why did the deploy fail?")

    assert result.run.status == "completed"
    assert result.output == "The three causes are: first, the"
    final = result.run.messages[-1]
    assert final.role == "assistant" and final.truncated is True
    assert server.requests[0]["max_tokens"] == 1000 and len(server.requests) == 1
    # the record survives saving and loading
    assert type(result).model_validate_json(result.model_dump_json()).run.messages[-1].truncated

    server.reply(text="All good.")
    whole = await agent.run("and now?")
    assert whole.run.messages[-1].truncated is False


async def test_a_cut_off_text_answer_is_reported_by_the_response(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    server.reply(text="Partial", truncated=True)
    server.reply(text="Whole")
    prompt = [Message(role="user", content="hi")]
    cut = await model.request(prompt, [], LIMITED)
    assert cut.truncated and cut.finish_reason == finish_reason_of(model)
    whole = await model.request(prompt, [], LIMITED)
    assert not whole.truncated and not whole.message.truncated


async def test_a_cut_off_tool_call_is_retried_once_with_a_higher_limit(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    rollouts = Rollouts()
    agent = Agent(id="ops", model=model, tools=[rollouts.tool], model_settings=LIMITED)
    server.reply(tool_calls=[("rollout", CUT_OFF_ARGS)], truncated=True)
    server.reply(tool_calls=[("rollout", WHOLE_ARGS)])
    server.reply(text="Rolled out.")

    result = await agent.run("roll api v2.4.1 out")

    assert result.run.status == "completed", result.run.error
    assert rollouts.runs == [WHOLE_ARGS]  # never with the cut-off arguments
    assert [r.get("max_tokens") for r in server.requests] == [1000, 2000, 1000]
    assert result.run.usage.requests == 3
    assert server.violations == []


async def test_a_tool_call_cut_off_twice_fails_the_run_and_never_runs(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    rollouts = Rollouts()
    agent = Agent(id="ops", model=model, tools=[rollouts.tool], model_settings=LIMITED)
    server.reply(tool_calls=[("rollout", CUT_OFF_ARGS)], truncated=True)
    server.reply(tool_calls=[("rollout", CUT_OFF_ARGS + "2.4")], truncated=True)

    result = await agent.run("roll api v2.4.1 out")

    assert result.run.status == "failed"
    assert result.run.error is not None
    assert "the model's tool call was cut off at 2000 tokens" in result.run.error.lower()
    assert "not run" in result.run.error
    assert rollouts.runs == [] and result.run.turn is None
    assert [r["max_tokens"] for r in server.requests] == [1000, 2000]
    assert server.pending == 0


async def test_a_cut_off_tool_call_is_never_offered_for_approval(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    rollouts = Rollouts(approval=True)
    agent = Agent(id="ops", model=model, tools=[rollouts.tool], model_settings=LIMITED)
    server.reply(tool_calls=[("rollout", CUT_OFF_ARGS)], truncated=True)
    server.reply(tool_calls=[("rollout", CUT_OFF_ARGS)], truncated=True)

    result = await agent.run("roll api v2.4.1 out")

    assert result.run.status == "failed" and result.run.pause is None
    assert result.pending_tool_calls == [] and rollouts.runs == []


async def test_at_the_ceiling_a_cut_off_tool_call_fails_without_a_retry(
    model: OpenAIChatModel | AnthropicModel, server: FakeModelServer
) -> None:
    rollouts = Rollouts()
    settings = replace(FAST, max_tokens=MAX_TOKENS_CEILING)
    agent = Agent(id="ops", model=model, tools=[rollouts.tool], model_settings=settings)
    server.reply(tool_calls=[("rollout", CUT_OFF_ARGS)], truncated=True)

    result = await agent.run("roll it out")

    assert result.run.status == "failed" and rollouts.runs == []
    assert f"cut off at {MAX_TOKENS_CEILING} tokens" in (result.run.error or "")
    assert len(server.requests) == 1


async def test_without_a_configured_limit_the_retry_doubles_what_the_model_wrote(
    server: FakeModelServer,
) -> None:
    """OpenAI sends no max_tokens unless asked: the retry doubles the tokens it was cut at."""
    rollouts = Rollouts()
    model = make_model("openai", server)
    agent = Agent(id="ops", model=model, tools=[rollouts.tool], model_settings=FAST)
    server.reply(
        tool_calls=[("rollout", CUT_OFF_ARGS)],
        truncated=True,
        usage={"prompt_tokens": 50, "completion_tokens": 4096},
    )
    server.reply(tool_calls=[("rollout", WHOLE_ARGS)])
    server.reply(text="Done.")

    result = await agent.run("roll it out")

    assert result.run.status == "completed" and rollouts.runs == [WHOLE_ARGS]
    assert [r.get("max_tokens") for r in server.requests] == [None, 8192, None]
    await model.aclose()
