"""Progress events (also to a callback that fails) and token usage.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import pytest

from bot import (
    AgentToolDecision,
    RunEvent,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import STAGING, OpsTools


@pytest.mark.parametrize("sync_callback", [False, True])
async def test_on_event_reports_progress(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, sync_callback: bool
) -> None:
    events: list[RunEvent] = []

    async def on_event_async(event: RunEvent) -> None:
        events.append(event)

    def on_event_sync(event: RunEvent) -> None:
        events.append(event)

    on_event = on_event_sync if sync_callback else on_event_async
    agent = make_agent(ops.all)
    (s,) = backend.reply(tool_calls=[("get_status", {"service": "api"})])
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    result = await agent.run("go", on_event=on_event)
    backend.reply(text="done")
    await agent.continue_run(run=result, approvals=[AgentToolDecision(d)], on_event=on_event)
    assert [(e.type, e.call_id) for e in events] == [
        ("model_response", None),
        ("tool_started", s),
        ("tool_finished", s),
        ("model_response", None),
        ("paused", None),
        ("tool_started", d),
        ("tool_finished", d),
        ("model_response", None),
        ("completed", None),
    ]
    assert {e.run_id for e in events} == {result.run.id}
    assert events[4].detail == "tool_approval"


async def test_a_failing_event_callback_does_not_break_the_run(
    backend: Backend, make_agent: MakeAgent
) -> None:
    def boom(event: RunEvent) -> None:
        raise RuntimeError("slack is down")

    backend.reply(text="fine")
    result = await make_agent([]).run("hi", on_event=boom)
    assert result.run.status == "completed"


async def test_usage_is_recorded(backend: Backend, make_agent: MakeAgent, ops: OpsTools) -> None:
    backend.reply(tool_calls=[("get_status", {"service": "api"})])
    backend.reply(text="done")
    result = await make_agent(ops.all).run("status")
    usage = result.run.usage
    assert usage.requests == 2
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
