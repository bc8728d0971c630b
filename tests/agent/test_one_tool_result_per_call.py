"""Exactly one tool result per call before the next model call, through a long run and
through call ids a provider repeats.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import json

from bot import (
    AgentHumanReviewRequest,
    AgentToolDecision,
    AgentToolOutput,
)
from bot.testing import check_chat_request
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import PROD, STAGING, Ledger, OpsTools, pending_ids


async def test_no_dangling_tool_calls_through_a_long_run(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools
) -> None:
    agent = make_agent(
        ops.all,
        human_review=lambda ctx: AgentHumanReviewRequest("look") if ctx.step == 2 else None,
    )
    a, b, _s = backend.reply(
        tool_calls=[("deploy", STAGING), ("deploy", PROD), ("get_status", {"service": "x"})]
    )
    r = await agent.run("go")
    backend.reply(tool_calls=[("ask_user", {"question": "ok?"}), ("bogus_tool", {"x": 1})])
    r = await agent.continue_run(
        run=r, approvals=[AgentToolDecision(a)], rejections=[AgentToolDecision(b)]
    )
    assert r.run.pause is not None and r.run.pause.kind == "human_review"
    r = await agent.continue_run(run=r, human_input="carry on")
    (ask,) = pending_ids(r)
    backend.reply(tool_calls=[("deploy", {"environment": "nowhere"})])  # invalid arguments
    backend.reply(text="finished")
    r = await agent.continue_run(run=r, tool_outputs=[AgentToolOutput(ask, "yes")])
    assert r.run.status == "completed"
    assert len(backend.requests) == 4
    for body in backend.requests:
        assert check_chat_request(body) is None
    last = backend.requests[-1]["messages"]
    errors = [
        json.loads(m["content"]) for m in last if m["role"] == "tool" and "error" in m["content"]
    ]
    assert {"error": "Tool call rejected"} in errors
    assert any("Unknown tool 'bogus_tool'" in e["error"] for e in errors)
    assert any("'environment'" in e["error"] for e in errors)


async def test_repeated_call_ids_from_the_provider_get_distinct_ids(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    backend.reply(
        tool_calls=[
            ("get_status", {"service": "a"}, "dup"),
            ("get_status", {"service": "b"}, "dup"),
        ]
    )
    backend.reply(tool_calls=[("get_status", {"service": "c"}, "dup")])
    backend.reply(text="done")
    result = await agent.run("check")
    assert result.run.status == "completed", result.run.error
    assert ledger.count("get_status") == 3
    ids = [c.id for m in result.run.messages for c in m.tool_calls]
    assert len(set(ids)) == 3
