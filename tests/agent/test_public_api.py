"""The public runtime API reads as one thing: every exported decision type can be recorded (or
is refused with a TypeError naming the one to use), an edit's reason is kept all the way to
the model, and `@tool` / `@tool(...)` are typed as making a `Tool`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest

from bot import (
    Agent,
    AgentHumanReviewRequest,
    AgentToolDecision,
    AgentToolEdit,
    AgentToolOutput,
    InMemoryStateAccessor,
    RunResult,
    Tool,
    ToolCallDecision,
    tool,
)

from .conftest import Backend, Ledger, OpsTools

PROD = {"environment": "production", "version": "v2"}
STAGING = {"environment": "staging", "version": "v2"}
ROOT = Path(__file__).resolve().parents[2]


class Paused(NamedTuple):
    agent: Agent
    result: RunResult
    deploy: str  # the id of a call waiting for approval
    ask: str  # the id of a hitl call waiting for an answer


async def _paused(backend: Backend, ops: OpsTools) -> Paused:
    """A run waiting on a deploy approval and a hitl question."""
    agent = Agent(id="ops", model=backend.model, tools=ops.all)
    deploy, ask = backend.reply(
        tool_calls=[("deploy", PROD), ("ask_user", {"question": "Announce it?"})]
    )
    result = await agent.run("deploy v2")
    assert result.run.status == "waiting_for_human"
    return Paused(agent, result, deploy, ask)


async def test_record_takes_a_tool_call_decision(backend: Backend, ops: OpsTools) -> None:
    p = await _paused(backend, ops)
    recorded = p.result.record(ToolCallDecision.approve(p.deploy, decided_by="U_ALICE"))
    assert recorded.type == "approve"
    assert p.result.run.pause is not None
    decision = p.result.run.pause.pending(p.deploy).decision  # type: ignore[union-attr]
    assert decision is not None and decision.decided_by == "U_ALICE"


async def test_record_takes_an_edit_and_keeps_its_reason(backend: Backend, ops: OpsTools) -> None:
    p = await _paused(backend, ops)
    recorded = p.result.record(
        AgentToolEdit(p.deploy, STAGING, reason="staging first", decided_by="U_ALICE")
    )
    assert (recorded.type, recorded.arguments, recorded.reason) == (
        "edit",
        STAGING,
        "staging first",
    )
    # the reason survives the saved run (what a state accessor or the store keeps)
    restored = RunResult.model_validate_json(p.result.model_dump_json())
    decision = restored.pending_tool_calls[0].decision
    assert decision is not None and decision.reason == "staging first"


async def test_record_takes_a_tool_output(backend: Backend, ops: OpsTools) -> None:
    p = await _paused(backend, ops)
    recorded = p.result.record(AgentToolOutput(p.ask, "Yes", decided_by="U_REQ"))
    assert (recorded.type, recorded.output, recorded.decided_by) == ("output", "Yes", "U_REQ")


async def test_agent_record_takes_the_same_types_and_validates_the_edit(
    backend: Backend, ops: OpsTools
) -> None:
    p = await _paused(backend, ops)
    with pytest.raises(ValueError, match="'environment'"):
        p.agent.record(p.result, AgentToolEdit(p.deploy, {"environment": "moon", "version": "v2"}))
    recorded = p.agent.record(p.result, AgentToolEdit(p.deploy, STAGING, reason="staging first"))
    assert recorded.reason == "staging first"
    assert p.agent.record(p.result, AgentToolOutput(p.ask, "Yes")).output == "Yes"


async def test_an_approve_or_reject_decision_is_refused_with_the_type_to_use(
    backend: Backend, ops: OpsTools
) -> None:
    p = await _paused(backend, ops)
    before = p.result.model_dump_json()
    with pytest.raises(TypeError, match=r"ToolCallDecision\.approve.*ToolCallDecision\.reject"):
        p.result.record(AgentToolDecision(p.deploy))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"approvals=\[\.\.\.\] or rejections=\[\.\.\.\]"):
        p.agent.record(p.result, AgentToolDecision(p.deploy, reason="no"))  # type: ignore[arg-type]
    assert p.result.model_dump_json() == before


async def test_a_review_request_or_anything_else_is_refused(
    backend: Backend, ops: OpsTools
) -> None:
    p = await _paused(backend, ops)
    with pytest.raises(TypeError, match=r"continue_run\(human_input=\.\.\.\)"):
        p.result.record(AgentHumanReviewRequest("check it"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Cannot record a dict: use ToolCallDecision"):
        p.result.record({"call_id": p.deploy, "type": "approve"})  # type: ignore[arg-type]


async def test_record_refuses_an_edit_that_changes_the_tool(
    backend: Backend, ops: OpsTools
) -> None:
    p = await _paused(backend, ops)
    with pytest.raises(ValueError, match="cannot change the tool"):
        p.result.record(AgentToolEdit(p.deploy, {"service": "api"}, tool_name="get_status"))
    assert p.result.pending_tool_calls[0].decision is None


async def test_an_edit_reason_reaches_the_model_with_the_tool_result(
    backend: Backend, ops: OpsTools, ledger: Ledger
) -> None:
    state = InMemoryStateAccessor()
    agent = Agent(id="ops", model=backend.model, tools=ops.all)
    (deploy,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2", state=state)
    backend.reply(text="Deployed to staging instead.")
    done = await agent.continue_run(
        run_id=result.run.id,
        state=state,
        edits=[AgentToolEdit(deploy, STAGING, reason="production is frozen this week")],
    )
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING]
    content = backend.tool_results()[deploy]
    assert content["reason"] == "production is frozen this week"
    assert content["arguments_used"] == STAGING


async def test_an_edit_without_a_reason_tells_the_model_no_reason(
    backend: Backend, ops: OpsTools
) -> None:
    agent = Agent(id="ops", model=backend.model, tools=ops.all)
    (deploy,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2")
    result.record(AgentToolEdit(deploy, STAGING))
    backend.reply(text="ok")
    await agent.continue_run(run=result)
    assert "reason" not in backend.tool_results()[deploy]


def test_tool_makes_a_tool_bare_with_options_and_called_directly() -> None:
    @tool
    def bare(x: int) -> int:
        """Bare."""
        return x

    @tool(name="renamed", kind="hitl")
    def with_options(x: int) -> int:
        """With options."""
        return x

    def plain(x: int) -> int:
        """Plain."""
        return x

    made = tool(plain, require_approval=True)
    assert [type(t) for t in (bare, with_options, made)] == [Tool, Tool, Tool]
    assert (with_options.name, with_options.kind, made.kind) == ("renamed", "hitl", "approval")


@pytest.mark.slow
def test_tool_is_typed_as_making_a_tool(tmp_path: Path) -> None:
    snippet = tmp_path / "typed_tools.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from bot import Tool, tool

            @tool
            def bare(x: int) -> int:
                return x

            @tool(require_approval=True, allowed_decisions=("approve", "reject"))
            def with_options(x: int) -> int:
                return x

            bare_tool: Tool = bare
            option_tool: Tool = with_options
            reveal_type(bare)
            reveal_type(with_options)
            tool(kind="sometimes")
            """
        )
    )
    found = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--no-error-summary", "--follow-imports=silent"),
            *("--cache-dir", str(tmp_path / "cache"), str(snippet)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    lines = [line.split(": ", 1)[1] for line in found.splitlines() if ": " in line]
    revealed = [line for line in lines if "Revealed type" in line]
    errors = [line for line in lines if line.startswith("error:")]
    assert revealed == ['note: Revealed type is "bot.agent.tools.Tool"'] * 2, found
    assert errors == [  # an unknown kind is caught before anything runs
        'error: No overload variant of "tool" matches argument type "str"  [call-overload]'
    ], found
