"""An OpenAI Agents SDK driver in its own process, for the adapter's restart tests.

    python -m tests.e2e.openai_agents_driver start
    python -m tests.e2e.openai_agents_driver resume <request id | RunState JSON file>

It reads MODEL_URL (the fake model's OpenAI base URL), SAYSO_URL, SAYSO_KEY and RAN_FILE (each
run of the tool appends a line there) from the environment. It prints the request ids as a
JSON list once its requests exist (`asked: [...]`), and the run's final output at the end
(`output: ...`). With STATE_FILE set, `start` saves the RunState JSON there before asking;
CONVERSATION scopes its requests' idempotency keys.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from bot.adapters.openai_agents import resolve, resume
from bot.client import AsyncSaysoClient
from bot.testing import chat_completion

CHANNEL = "C_GENERAL"
JsonObject = dict[str, object]


def scaling_model(body: JsonObject) -> JsonObject:
    """The fake model's answers: scale `api` to 2 replicas, then say what the tool returned."""
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else {}
    if isinstance(last, dict) and last.get("role") == "tool":
        return chat_completion(text=f"tool said: {last.get('content')}", request=body)
    call = {"id": "call_1", "name": "scale", "arguments": {"service": "api", "replicas": 2}}
    return chat_completion(tool_calls=[call], request=body)


def scaling_agent(model_url: str, ran_file: Path) -> Agent[None]:
    """An agent whose `scale` tool needs approval; each run of the tool is a line in ran_file."""

    @function_tool(needs_approval=True)
    def scale(service: str, replicas: int = 1) -> str:
        """Scale a service."""
        with ran_file.open("a") as ran:
            ran.write(f"{service} {replicas}\n")
        return f"{service} x{replicas}"

    model = OpenAIChatCompletionsModel(
        "fake-model", AsyncOpenAI(base_url=model_url, api_key="test", max_retries=0)
    )
    return Agent(name="ops", instructions="You run operations.", model=model, tools=[scale])


def asked(ids: list[str]) -> None:
    print("asked:", json.dumps(ids), flush=True)


def keep(state_json: str) -> None:
    if "STATE_FILE" in os.environ:
        Path(os.environ["STATE_FILE"]).write_text(state_json)


def saved_from(arg: str | None) -> str | None:
    """A request id, or the text of the RunState JSON file it names."""
    return Path(arg).read_text() if arg and Path(arg).is_file() else arg


async def main(mode: str, saved: str | None) -> None:
    set_tracing_disabled(True)
    agent = scaling_agent(os.environ["MODEL_URL"], Path(os.environ["RAN_FILE"]))
    client = AsyncSaysoClient(os.environ["SAYSO_URL"], os.environ["SAYSO_KEY"])
    if mode == "start":
        result = await Runner.run(agent, "scale api")
        state = result.to_state()
        keep(state.to_string())
        conversation = os.environ.get("CONVERSATION")
        state = await resolve(
            state, client, channel=CHANNEL, conversation=conversation, on_asked=asked
        )
        result = await Runner.run(agent, state)
    elif mode == "resume" and saved is not None:
        result = await resume(agent, saved, client, channel=CHANNEL, on_asked=asked)
    else:
        sys.exit(__doc__)
    print("output:", result.final_output, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], saved_from(sys.argv[2] if len(sys.argv) > 2 else None)))
