"""FrameworkAgent (bot.adapters.framework): a framework's interrupts become a pause with one
pending call each, decisions reach `resume` in the framework's terms, and a resume that
died or failed is never repeated on its own: the calls are asked about again, marked
interrupted."""

from __future__ import annotations

from typing import Any

import pytest

from bot.adapters.framework import (
    CallDecision,
    Finished,
    FrameworkAgent,
    FrameworkCall,
    FrameworkTool,
    Interrupted,
    Step,
)
from bot.agent import AgentToolDecision, AgentToolEdit, InMemoryStateAccessor, Message

SCHEMA = {
    "type": "object",
    "properties": {"env": {"type": "string"}},
    "required": ["env"],
}


class ProcessDied(BaseException):
    """Stands for the process dying: nothing of sayso's catches it."""


class Scripted(FrameworkAgent):
    """Holds `deploy` and `notify` for people; `die`/`fail` make the next resume die/raise."""

    def __init__(self) -> None:
        super().__init__(
            "scripted",
            "scripted-framework",
            [FrameworkTool("deploy", "Deploy", SCHEMA), FrameworkTool("notify", "Notify")],
        )
        self.resumed: list[list[CallDecision]] = []
        self.started: list[list[str]] = []
        self.die = False
        self.fail = False

    async def start(self, conversation: list[Message], context: dict[str, Any]) -> Step:
        self.started.append([m.content or "" for m in conversation])
        calls = [
            FrameworkCall("c1", "deploy", {"env": "prod"}),
            FrameworkCall("c2", "notify", {"to": "ops"}),
        ]
        return Interrupted(calls, {"asked": ["c1", "c2"]})

    async def resume(
        self, state: Any, decisions: list[CallDecision], context: dict[str, Any]
    ) -> Step:
        assert state == {"asked": ["c1", "c2"]}  # the saved framework state comes back
        self.resumed.append(decisions)
        if self.die:
            raise ProcessDied
        if self.fail:
            raise RuntimeError("the framework broke")
        return Finished("; ".join(f"{d.call_id}:{d.type}" for d in decisions), {"done": True})


async def paused(agent: Scripted, acc: InMemoryStateAccessor) -> str:
    result = await agent.run("deploy prod", state=acc, run_id="r1")
    assert result.run.status == "waiting_for_human"
    assert result.run.pause is not None
    assert [p.call.id for p in result.run.pause.pending_tool_calls] == ["c1", "c2"]
    return result.run.id


async def test_decisions_reach_the_framework_in_its_terms() -> None:
    agent, acc = Scripted(), InMemoryStateAccessor()
    run_id = await paused(agent, acc)
    done = await agent.continue_run(
        run_id=run_id,
        state=acc,
        edits=[AgentToolEdit(call_id="c1", arguments={"env": "staging"}, reason="not prod")],
        rejections=[AgentToolDecision(call_id="c2", reason="no noise")],
    )
    assert done.run.status == "completed" and done.output == "c1:edit; c2:reject"
    assert agent.resumed == [
        [
            CallDecision("c1", "edit", {"env": "staging"}, "not prod"),
            CallDecision("c2", "reject", reason="no noise"),
        ]
    ]
    assert done.run.messages[-1] == Message(role="assistant", content="c1:edit; c2:reject")


async def test_an_edit_that_breaks_the_schema_changes_nothing() -> None:
    agent, acc = Scripted(), InMemoryStateAccessor()
    run_id = await paused(agent, acc)
    with pytest.raises(ValueError, match="env"):
        await agent.continue_run(
            run_id=run_id,
            state=acc,
            edits=[AgentToolEdit(call_id="c1", arguments={"env": 3})],
            approvals=[AgentToolDecision(call_id="c2")],
        )
    saved = await acc.load(run_id)
    assert saved is not None and saved.run.status == "waiting_for_human"
    assert agent.resumed == []


async def test_a_resume_that_died_is_asked_about_again_never_repeated() -> None:
    agent, acc = Scripted(), InMemoryStateAccessor()
    run_id = await paused(agent, acc)
    agent.die = True
    with pytest.raises(ProcessDied):
        await agent.continue_run(
            run_id=run_id,
            state=acc,
            edits=[AgentToolEdit(call_id="c1", arguments={"env": "staging"})],
            rejections=[AgentToolDecision(call_id="c2", reason="no")],
        )
    agent.die = False
    again = await Scripted().recover(run_id=run_id, state=acc)  # another process takes it up
    assert again.run.status == "waiting_for_human" and again.run.pause is not None
    [pending] = again.run.pause.pending_tool_calls
    assert pending.interrupted and pending.call.arguments == {"env": "staging"}  # what ran
    assert again.run.pause.seq == 2  # a new pause: new cards
    later = Scripted()
    done = await later.continue_run(
        run_id=run_id, state=acc, approvals=[AgentToolDecision(call_id="c1")]
    )
    # c1 runs again as it ran before (a person chose to); c2 stays rejected
    assert later.resumed == [
        [CallDecision("c1", "edit", {"env": "staging"}), CallDecision("c2", "reject", reason="no")]
    ]
    assert done.run.status == "completed"


async def test_a_failed_resume_fails_and_its_retry_asks_again() -> None:
    agent, acc = Scripted(), InMemoryStateAccessor()
    run_id = await paused(agent, acc)
    agent.fail = True
    failed = await agent.continue_run(
        run_id=run_id,
        state=acc,
        approvals=[AgentToolDecision(call_id="c1"), AgentToolDecision(call_id="c2")],
    )
    assert failed.run.status == "failed"
    assert "the framework broke" in (failed.run.error or "")
    asked = await agent.continue_run(run_id=run_id, state=acc, retry=True)
    assert asked.run.status == "waiting_for_human" and asked.run.pause is not None
    assert [p.interrupted for p in asked.run.pause.pending_tool_calls] == [True, True]
    assert len(agent.resumed) == 1  # the retry did not resume by itself


async def test_a_run_that_died_before_its_first_pause_starts_again() -> None:
    agent, acc = Scripted(), InMemoryStateAccessor()

    class DiesStarting(Scripted):
        async def start(self, conversation: list[Message], context: dict[str, Any]) -> Step:
            raise ProcessDied

    with pytest.raises(ProcessDied):
        await DiesStarting().run("deploy prod", state=acc, run_id="r1")
    recovered = await agent.recover(run_id="r1", state=acc)
    assert recovered.run.status == "waiting_for_human"
    assert agent.started == [["deploy prod"]]


async def test_tool_outputs_are_refused() -> None:
    from bot.agent import AgentToolOutput

    agent, acc = Scripted(), InMemoryStateAccessor()
    run_id = await paused(agent, acc)
    with pytest.raises(ValueError, match="approvals"):
        await agent.continue_run(
            run_id=run_id, state=acc, tool_outputs=[AgentToolOutput(call_id="c1", output="x")]
        )


async def test_an_interrupt_without_calls_fails_the_run_and_keeps_the_state() -> None:
    class Empty(Scripted):
        async def resume(
            self, state: Any, decisions: list[CallDecision], context: dict[str, Any]
        ) -> Step:
            return Interrupted([], {"nothing": "to ask"})

    agent, acc = Empty(), InMemoryStateAccessor()
    run_id = await paused(agent, acc)
    failed = await agent.continue_run(
        run_id=run_id,
        state=acc,
        approvals=[AgentToolDecision(call_id="c1"), AgentToolDecision(call_id="c2")],
    )
    assert failed.run.status == "failed" and "without any call" in (failed.run.error or "")
    assert failed.run.context["framework_state"] == {"asked": ["c1", "c2"]}
