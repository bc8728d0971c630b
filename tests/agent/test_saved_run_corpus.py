"""Runs saved by an older sayso stay readable: each saved `RunResult` of the corpus (one per
schema version and state, written once by corpus/make_corpus.py) is loaded by the current code
and continued to completion; the tools run exactly once.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot import (
    SCHEMA_VERSION,
    Agent,
    AgentToolDecision,
    AgentToolOutput,
    RunResult,
)
from tests.agent.backends import Backend
from tests.agent.corpus.agent import CORPUS, EDITED, STAGING, corpus_agent
from tests.agent.ops import Ledger

Continuation = Callable[[Agent, RunResult, Backend, Ledger], Awaitable[None]]


def version_of(name: str) -> int:
    """The schema version a corpus file was saved with: v1_tool_approval.json -> 1."""
    return int(name.split("_")[0].removeprefix("v"))


def load(path: Path) -> RunResult:
    result = RunResult.model_validate_json(path.read_text())
    assert result.schema_version == version_of(path.name)
    return result


async def approve_the_deploy(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    assert saved.run.pause is not None and saved.run.pause.kind == "tool_approval"
    backend.reply(text="Deployed v2 to staging.")
    done = await agent.continue_run(run=saved, approvals=[AgentToolDecision("call_deploy")])
    assert done.run.status == "completed", done.run.error
    assert done.output == "Deployed v2 to staging."
    assert ledger.calls == [("deploy", STAGING)]
    assert backend.tool_results() == {"call_deploy": {"deployed": "v2", "environment": "staging"}}


async def answer_both_calls(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    assert saved.run.pause is not None and saved.run.pause.kind == "external_output"
    backend.reply(text="Your ticket T-1 has shipped.")
    done = await agent.continue_run(
        run=saved,
        tool_outputs=[
            AgentToolOutput("call_ask", "T-1"),
            AgentToolOutput("call_ticket", {"status": "shipped"}),
        ],
    )
    assert done.run.status == "completed", done.run.error
    assert ledger.calls == []  # manual and hitl bodies never run: the outputs are the results
    assert backend.tool_results() == {"call_ask": "T-1", "call_ticket": {"status": "shipped"}}


async def approve_and_answer(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    assert saved.run.pause is not None and saved.run.pause.kind == "tool_input"
    backend.reply(text="Deployed, and the team knows.")
    done = await agent.continue_run(
        run=saved,
        approvals=[AgentToolDecision("call_deploy")],
        tool_outputs=[AgentToolOutput("call_ask", "yes")],
    )
    assert done.run.status == "completed", done.run.error
    assert ledger.calls == [("deploy", STAGING)]
    assert list(backend.tool_results()) == ["call_deploy", "call_ask"]


async def review_the_draft(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    assert saved.run.pause is not None and saved.run.pause.kind == "human_review"
    backend.reply(text="Final: all systems go, no incidents.")
    done = await agent.continue_run(run=saved, human_input="Say there were no incidents.")
    assert done.run.status == "completed", done.run.error
    assert done.output == "Final: all systems go, no incidents."
    assert backend.messages[-1][-1] == {"role": "user", "content": "Say there were no incidents."}
    assert ledger.calls == []


async def review_the_tool_calls(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    assert saved.run.pause is not None and saved.run.pause.kind == "human_review"
    assert ledger.calls == []  # nothing ran before the review
    backend.reply(text="The api is healthy.")
    done = await agent.continue_run(run=saved, human_input="Check the database next time.")
    assert done.run.status == "completed", done.run.error
    assert ledger.calls == [("get_status", {"service": "api"})]
    roles = [(m["role"], m.get("tool_call_id")) for m in backend.messages[-1][1:]]
    assert roles == [("user", None), ("assistant", None), ("tool", "call_status"), ("user", None)]


async def approve_the_interrupted_edit(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    (pending,) = saved.pending_tool_calls
    assert pending.interrupted and pending.kind == "approval"
    assert pending.call.arguments == EDITED  # shown as it ran: with the reviewer's arguments
    backend.reply(text="Deployed v3 to staging.")
    done = await agent.continue_run(run=saved, approvals=[AgentToolDecision("call_deploy")])
    assert done.run.status == "completed", done.run.error
    assert ledger.calls == [("deploy", EDITED)]  # runs again as it started, once
    result = backend.tool_results()["call_deploy"]
    assert result["arguments_used"] == EDITED


async def recover_then_approve(
    agent: Agent, saved: RunResult, backend: Backend, ledger: Ledger
) -> None:
    assert saved.run.status == "running"
    recovered = await agent.recover(run=saved)
    assert ledger.calls == [] and backend.requests == []  # not re-run silently
    assert recovered.run.status == "waiting_for_human"
    await approve_the_interrupted_edit(agent, recovered, backend, ledger)


CASES: dict[str, Continuation] = {
    "v1_tool_approval.json": approve_the_deploy,
    "v1_external_output.json": answer_both_calls,
    "v1_tool_input.json": approve_and_answer,
    "v1_human_review.json": review_the_draft,
    "v1_human_review_of_tool_calls.json": review_the_tool_calls,
    "v1_interrupted_edit.json": approve_the_interrupted_edit,
    "v1_crashed_in_edited_call.json": recover_then_approve,
}


def test_every_saved_run_has_a_case_and_the_current_version_is_saved() -> None:
    files = sorted(p.name for p in CORPUS.glob("v*.json"))
    assert files == sorted(CASES)
    assert any(name.startswith(f"v{SCHEMA_VERSION}_") for name in files), (
        f"no saved runs of schema version {SCHEMA_VERSION}: run make_corpus.py once"
    )
    for name in files:
        assert json.loads((CORPUS / name).read_text())["schema_version"] == version_of(name)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_saved_run_continues_to_completion(name: str, backend: Backend) -> None:
    ledger = Ledger()
    agent = corpus_agent(backend.model, ledger)
    saved = load(CORPUS / name)
    await CASES[name](agent, saved, backend, ledger)
