"""The approval policy at three levels (agent, tool, call), evaluated once per call.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

from typing import Any

from bot import (
    AgentToolDecision,
    InMemoryStateAccessor,
    tool,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import PROD, STAGING, Ledger, OpsTools, pending_ids


async def test_tool_level_policy_function(
    backend: Backend, make_agent: MakeAgent, ledger: Ledger
) -> None:
    seen: list[tuple[str, dict]] = []

    def production_only(call: Any, context: dict) -> bool:
        seen.append((call.arguments["environment"], context))
        return call.arguments["environment"] == "production"

    @tool(require_approval=production_only)
    def deploy(environment: str, version: str) -> str:
        ledger.add("deploy", environment=environment)
        return "ok"

    agent = make_agent([deploy])
    _, prod = backend.reply(tool_calls=[("deploy", STAGING), ("deploy", PROD)])
    result = await agent.run("deploy", context={"team": "ops"})
    assert pending_ids(result) == [prod]
    assert ledger.args("deploy") == [{"environment": "staging"}]
    assert seen == [("staging", {"team": "ops"}), ("production", {"team": "ops"})]


async def test_agent_wide_policy_and_tool_level_override(
    backend: Backend, make_agent: MakeAgent, ledger: Ledger
) -> None:
    @tool
    def get_status(service: str) -> str:
        ledger.add("get_status")
        return "up"

    @tool(require_approval=False)
    def read_logs(service: str) -> str:
        ledger.add("read_logs")
        return "logs"

    agent = make_agent([get_status, read_logs], require_approval=True)
    s, _ = backend.reply(
        tool_calls=[("get_status", {"service": "api"}), ("read_logs", {"service": "api"})]
    )
    result = await agent.run("look")
    assert pending_ids(result) == [s]  # agent-wide True; the tool's own False wins for read_logs
    assert ledger.calls == [("read_logs", {})]


async def test_call_level_policy_overrides_tool_level_and_is_evaluated_once(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    evaluations: list[str] = []

    def policy(call: Any, context: dict) -> bool:
        evaluations.append(call.name)
        # deploy (require_approval=True at tool level) runs freely; get_status needs approval.
        # Any later evaluation would answer the opposite, which the test would notice.
        flip = len(evaluations) > 2
        return (call.name == "get_status") != flip

    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    _, s = backend.reply(tool_calls=[("deploy", STAGING), ("get_status", {"service": "api"})])
    result = await agent.run("go", require_approval=policy, state=state)
    assert ledger.calls == [("deploy", STAGING)]
    assert [(p.call.id, p.kind) for p in result.pending_tool_calls] == [(s, "approval")]
    assert evaluations == ["deploy", "get_status"]

    backend.reply(text="done")
    done = await agent.continue_run(
        run_id=result.run.id, state=state, approvals=[AgentToolDecision(s)], require_approval=policy
    )
    assert done.run.status == "completed"
    assert evaluations == ["deploy", "get_status"]  # never recomputed on continue
    assert ledger.count("get_status") == 1 and ledger.count("deploy") == 1
