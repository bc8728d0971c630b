"""Model providers: provider:model strings, the OpenAI env path, Anthropic, scripted scripts."""

from __future__ import annotations

import pytest

from bot import Agent, AgentToolDecision, tool
from bot.agent.messages import Message
from bot.agent.models import (
    AnthropicModel,
    OpenAIChatModel,
    ScriptedModel,
    ToolSpec,
    call,
    register_script,
    resolve_model,
)
from bot.agent.models.config import ProviderSettings
from bot.testing import FakeModelServer
from tests.agent.backends import FAST


@tool(require_approval=True)
def deploy(environment: str, version: str) -> dict:
    """Deploy a version."""
    return {"deployed": version, "environment": environment}


def test_provider_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:9/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:8")
    openai = resolve_model("openai:gpt-4o-mini")
    assert isinstance(openai, OpenAIChatModel)
    assert (openai.model, openai.name, openai.base_url) == (
        "gpt-4o-mini",
        "openai:gpt-4o-mini",
        "http://localhost:9/v1",
    )
    anthropic = resolve_model("anthropic:claude-sonnet-4-5")
    assert isinstance(anthropic, AnthropicModel)
    assert (anthropic.model, anthropic.base_url) == ("claude-sonnet-4-5", "http://localhost:8")
    scripted = resolve_model("scripted:echo")
    assert isinstance(scripted, ScriptedModel) and scripted.name == "scripted:echo"
    assert resolve_model(scripted) is scripted
    # a model name may contain colons (e.g. Ollama tags)
    tagged = resolve_model("openai:llama3.1:8b")
    assert isinstance(tagged, OpenAIChatModel) and tagged.model == "llama3.1:8b"
    with pytest.raises(ValueError, match="Unknown model provider 'gemini'"):
        resolve_model("gemini:pro")
    with pytest.raises(ValueError, match="must look like provider:model"):
        resolve_model("gpt-4o")
    with pytest.raises(ValueError, match="Unknown script 'nope'"):
        resolve_model("scripted:nope")


def test_default_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    settings = ProviderSettings(_env_file=None)  # type: ignore[call-arg]
    assert settings.openai_base_url == "https://api.openai.com/v1"
    assert settings.anthropic_base_url == "https://api.anthropic.com"


async def test_openai_via_provider_string_and_env(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = Agent(
        id="ops",
        model="openai:gpt-4o-mini",
        instructions="Be brief.",
        tools=[deploy],
        model_settings=FAST,
    )
    (cid,) = server.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v2"})])
    result = await agent.run("deploy v2 to staging")
    assert result.run.model == "openai:gpt-4o-mini"
    assert result.pending_tool_calls[0].call.arguments == {
        "environment": "staging",
        "version": "v2",
    }
    server.reply(text="Deployed.", usage={"prompt_tokens": 100, "completion_tokens": 7})
    done = await agent.continue_run(run=result, approvals=[AgentToolDecision(cid)])
    assert done.output == "Deployed."

    first, second = server.requests
    assert first["model"] == "gpt-4o-mini"
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][0]["content"].startswith("Be brief.")
    assert first["messages"][1] == {"role": "user", "content": "deploy v2 to staging"}
    assert first["tools"][0]["function"]["name"] == "deploy"
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assistant, tool_msg = second["messages"][2:4]
    assert assistant["tool_calls"][0]["function"]["arguments"] == (
        '{"environment": "staging", "version": "v2"}'
    )
    assert tool_msg == {
        "role": "tool",
        "tool_call_id": cid,
        "content": '{"deployed": "v2", "environment": "staging"}',
    }
    usage = done.run.usage
    assert usage.requests == 2 and usage.input_tokens >= 100 and usage.output_tokens >= 7
    await agent.model_client.aclose()  # type: ignore[attr-defined]


async def test_usage_is_summed_from_provider_numbers(server: FakeModelServer) -> None:
    model = OpenAIChatModel("m", base_url=server.base_url, api_key="k")
    agent = Agent(id="u", model=model, tools=[deploy], require_approval=False, model_settings=FAST)
    server.reply(
        tool_calls=[("get_nothing", {})], usage={"prompt_tokens": 10, "completion_tokens": 5}
    )
    server.reply(text="ok", usage={"prompt_tokens": 20, "completion_tokens": 7})
    result = await agent.run("hi")
    assert result.run.usage.model_dump() == {"requests": 2, "input_tokens": 30, "output_tokens": 12}
    await model.aclose()


async def test_anthropic_messages_api(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    agent = Agent(
        id="ops",
        model="anthropic:claude-test",
        instructions="Be careful.",
        tools=[deploy],
        model_settings=FAST,
    )
    (cid,) = server.reply(
        text="Deploying.", tool_calls=[("deploy", {"environment": "staging", "version": "v2"})]
    )
    result = await agent.run("deploy v2")
    (pending,) = result.pending_tool_calls
    assert (pending.call.id, pending.call.name, pending.kind) == (cid, "deploy", "approval")

    server.reply(text="Done.", usage={"prompt_tokens": 40, "completion_tokens": 3})
    done = await agent.continue_run(run=result, approvals=[AgentToolDecision(cid)])
    assert done.run.status == "completed" and done.output == "Done."
    assert server.violations == []

    body = server.requests[-1]
    assert body["model"] == "claude-test" and body["max_tokens"] > 0
    assert body["system"].startswith("Be careful.")
    assert body["tools"][0]["name"] == "deploy"
    assert body["tools"][0]["input_schema"]["required"] == ["environment", "version"]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "deploy v2"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Deploying."},
                {
                    "type": "tool_use",
                    "id": cid,
                    "name": "deploy",
                    "input": {"environment": "staging", "version": "v2"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": cid,
                    "content": '{"deployed": "v2", "environment": "staging"}',
                }
            ],
        },
    ]
    headers = server.headers[-1]
    assert headers["x-api-key"] == "sk-ant-test" and headers["anthropic-version"]
    assert done.run.usage.input_tokens >= 40 and done.run.usage.requests == 2


async def test_registered_script_by_name() -> None:
    @register_script("test-deploy-then-done")
    def script(messages: list[Message], tools: list[ToolSpec]) -> object:
        if messages[-1].role == "tool":
            return f"Result: {messages[-1].content}"
        return call("deploy", environment="staging", version="v9")

    agent = Agent(id="ops", model="scripted:test-deploy-then-done", tools=[deploy])
    result = await agent.run("go")
    (p,) = result.pending_tool_calls
    assert p.call.id == "call_1_0" and p.call.arguments == {
        "environment": "staging",
        "version": "v9",
    }
    done = await agent.continue_run(run=result, approvals=[AgentToolDecision(p.call.id)])
    assert done.output == 'Result: {"deployed": "v9", "environment": "staging"}'
    assert done.run.usage.requests == 2


async def test_scripted_list_and_echo() -> None:
    listed = Agent(id="l", model=ScriptedModel(["first answer"]))
    assert (await listed.run("x")).output == "first answer"
    echo = Agent(id="e", model="scripted:echo")
    assert (await echo.run("hello")).output == "You said: hello"
