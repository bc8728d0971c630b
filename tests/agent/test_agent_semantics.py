"""The numbered semantics of the agent runtime issue, each against both model backends.

Every test here runs twice (`backend` is parametrized): over real HTTP against
`FakeModelServer` with the OpenAI provider, and against the scripted model. Both answer
400 to a request with a dangling tool call, and the fixture asserts none was sent (rule 7).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from bot import (
    Agent,
    AgentHumanReviewRequest,
    AgentToolDecision,
    AgentToolEdit,
    AgentToolOutput,
    HumanReviewContext,
    InMemoryStateAccessor,
    RunEvent,
    RunResult,
    ToolCallDecision,
    tool,
)
from bot.testing import check_chat_request

from .conftest import Backend, Ledger, OpsTools

MakeAgent = Callable[..., Agent]
STAGING = {"environment": "staging", "version": "v2"}
PROD = {"environment": "production", "version": "v2"}


def pending_ids(result: RunResult) -> list[str]:
    return [p.call.id for p in result.pending_tool_calls]


# -- 1. several calls per turn; automatic tools first; pause kinds -------------------------


async def test_1_auto_tools_run_first_and_every_person_call_is_pending(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    status_id, deploy_id, ask_id = backend.reply(
        tool_calls=[
            ("get_status", {"service": "api"}),
            ("deploy", STAGING),
            ("ask_user", {"question": "Which version?"}),
        ]
    )
    result = await agent.run("deploy v2 to staging", context={"requested_by": "U123"})

    assert result.run.status == "waiting_for_human"
    assert result.run.pause is not None and result.run.pause.kind == "tool_input"
    assert [(p.call.id, p.call.name, p.kind) for p in result.pending_tool_calls] == [
        (deploy_id, "deploy", "approval"),
        (ask_id, "ask_user", "hitl"),
    ]
    assert result.pending_tool_calls[0].call.arguments == STAGING
    assert ledger.calls == [("get_status", {"service": "api"})]  # the automatic tool ran
    assert len(backend.requests) == 1  # no model call while calls are unanswered

    backend.reply(text="Deployed v2 to staging.")
    done = await agent.continue_run(
        run=result,
        approvals=[AgentToolDecision(deploy_id)],
        tool_outputs=[AgentToolOutput(ask_id, "v2 please")],
    )
    assert done.run.status == "completed"
    assert done.output == "Deployed v2 to staging."
    assert ledger.count("get_status") == 1 and ledger.count("deploy") == 1
    results = backend.tool_results()
    assert list(results) == [status_id, deploy_id, ask_id]  # in the order of the calls
    assert results[status_id] == {"service": "api", "healthy": True}
    assert results[deploy_id] == {"deployed": "v2", "environment": "staging"}
    assert results[ask_id] == "v2 please"


@pytest.mark.parametrize(
    ("calls", "kind"),
    [
        ([("deploy", STAGING), ("deploy", PROD)], "tool_approval"),
        (
            [("ask_user", {"question": "?"}), ("ticket_lookup", {"ticket_id": "T-1"})],
            "external_output",
        ),
        ([("deploy", STAGING), ("ticket_lookup", {"ticket_id": "T-1"})], "tool_input"),
    ],
)
async def test_1_pause_kind(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, calls: list, kind: str
) -> None:
    backend.reply(tool_calls=calls)
    result = await make_agent(ops.all).run("go")
    assert result.run.pause is not None and result.run.pause.kind == kind
    assert len(result.pending_tool_calls) == len(calls)


# -- 2. decisions by call id: approve, reject, edit, outputs --------------------------------


async def test_2_decisions_name_call_ids_not_tools(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    a, b = backend.reply(tool_calls=[("deploy", STAGING), ("deploy", PROD)])
    result = await agent.run("deploy v2 everywhere")
    assert pending_ids(result) == [a, b]

    backend.reply(text="Staging done; production was not authorized.")
    done = await agent.continue_run(
        run=result,
        approvals=[AgentToolDecision(a)],
        rejections=[AgentToolDecision(b, "Not authorized")],
    )
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING]  # the approved call, with the model's arguments
    results = backend.tool_results()
    assert results[a] == {"deployed": "v2", "environment": "staging"}
    assert results[b] == {"error": "Not authorized"}
    system = backend.messages[-1][0]
    assert system["role"] == "system" and "do not retry" in system["content"]


async def test_2_reject_default_reason(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy")
    backend.reply(text="ok, not deploying")
    done = await agent.continue_run(run=result, rejections=[AgentToolDecision(a)])
    assert done.run.status == "completed"
    assert backend.tool_results() == {a: {"error": "Tool call rejected"}}
    assert ledger.count("deploy") == 0


async def test_2_edit_runs_new_arguments_and_tells_the_model(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2")
    backend.reply(text="Deployed to staging instead.")
    done = await agent.continue_run(run=result, edits=[AgentToolEdit(a, STAGING)])
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING]  # what actually ran
    content = backend.tool_results()[a]
    assert "reviewer replaced the arguments" in content["note"]
    assert content["proposed_arguments"] == PROD
    assert content["arguments_used"] == STAGING
    assert content["result"] == {"deployed": "v2", "environment": "staging"}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"environment": "moon", "version": "v2"}, "environment"),
        ({"environment": "staging"}, "version"),
        ({"environment": "staging", "version": "v2", "force": True}, "force"),
    ],
)
async def test_2_invalid_edit_names_the_field_and_changes_nothing(
    backend: Backend,
    make_agent: MakeAgent,
    ops: OpsTools,
    ledger: Ledger,
    arguments: dict,
    field: str,
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2", state=state)
    before = result.model_dump_json()
    stored_before = (await state.load(result.run.id)).model_dump_json()  # type: ignore[union-attr]

    with pytest.raises(ValueError, match=f"'{field}'"):
        await agent.continue_run(run=result, edits=[AgentToolEdit(a, arguments)])
    with pytest.raises(ValueError, match=f"'{field}'"):
        agent.record(result, ToolCallDecision.edit(a, arguments))

    assert result.model_dump_json() == before
    assert (await state.load(result.run.id)).model_dump_json() == stored_before  # type: ignore[union-attr]
    assert ledger.count("deploy") == 0
    assert len(backend.requests) == 1


async def test_2_edit_cannot_change_the_tool(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2")
    with pytest.raises(ValueError, match="cannot change the tool"):
        await agent.continue_run(
            run=result, edits=[AgentToolEdit(a, {"service": "api"}, tool_name="get_status")]
        )
    assert ledger.calls == []


async def test_2_outputs_answer_manual_and_hitl_calls_and_a_message_is_no_substitute(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools
) -> None:
    agent = make_agent(ops.all)
    ask, ticket = backend.reply(
        tool_calls=[
            ("ask_user", {"question": "Which env?"}),
            ("ticket_lookup", {"ticket_id": "T-9"}),
        ]
    )
    result = await agent.run("help")
    assert result.run.pause is not None and result.run.pause.kind == "external_output"
    with pytest.raises(ValueError, match=f"Missing output for tool call {ask}"):
        await agent.continue_run(run=result, human_input="staging, and the ticket is closed")
    with pytest.raises(ValueError, match="is a hitl call: give its output"):
        await agent.continue_run(run=result, approvals=[AgentToolDecision(ask)])

    backend.reply(text="Thanks")
    done = await agent.continue_run(
        run=result,
        tool_outputs=[
            AgentToolOutput(ask, "staging"),
            AgentToolOutput(ticket, {"status": "shipped"}),
        ],
    )
    assert done.run.status == "completed"
    assert backend.tool_results() == {ask: "staging", ticket: {"status": "shipped"}}


# -- 3. errors ---------------------------------------------------------------------------


async def test_3_error_messages(backend: Backend, make_agent: MakeAgent, ops: OpsTools) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    a, b = backend.reply(tool_calls=[("deploy", STAGING), ("deploy", PROD)])
    result = await agent.run("deploy", state=state)
    rid = result.run.id

    with pytest.raises(ValueError, match=f"^Missing approval decision for tool call {b}$"):
        await agent.continue_run(run=result, approvals=[AgentToolDecision(a)])
    with pytest.raises(ValueError, match=r"^Run nope not found$"):
        await agent.continue_run(run_id="nope", state=state, approvals=[AgentToolDecision(a)])
    with pytest.raises(ValueError, match="Unknown tool call call_999"):
        await agent.continue_run(
            run=result, approvals=[AgentToolDecision(a), AgentToolDecision("call_999")]
        )
    with pytest.raises(ValueError, match=f"{a} already has a decision"):
        await agent.continue_run(
            run=result,
            approvals=[AgentToolDecision(a), AgentToolDecision(b)],
            rejections=[AgentToolDecision(a)],
        )
    other = Agent(id="other", model=agent.model_client, tools=ops.all)
    with pytest.raises(ValueError, match="made by agent 'ops'"):
        await other.continue_run(run=result, approvals=[AgentToolDecision(a), AgentToolDecision(b)])
    assert len(backend.requests) == 1  # none of these reached the model

    backend.reply(text="done")
    done = await agent.continue_run(
        run_id=rid, state=state, approvals=[AgentToolDecision(a), AgentToolDecision(b)]
    )
    assert done.run.status == "completed"
    with pytest.raises(ValueError, match=f"Run {rid} is not waiting for human input"):
        await agent.continue_run(run=done, approvals=[AgentToolDecision(a)])


async def test_3_review_pause_without_input(backend: Backend, make_agent: MakeAgent) -> None:
    agent = make_agent([], human_review=lambda ctx: AgentHumanReviewRequest("check it"))
    backend.reply(text="draft")
    result = await agent.run("write")
    with pytest.raises(ValueError, match=f"^Run {result.run.id} is waiting for human input$"):
        await agent.continue_run(run=result)


# -- 4. decisions one at a time, saved in between -------------------------------------------


async def test_4_decisions_accumulate_across_saves(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    a, b, t = backend.reply(
        tool_calls=[("deploy", STAGING), ("deploy", PROD), ("ticket_lookup", {"ticket_id": "T-1"})]
    )
    first = await agent.run("deploy", state=state)
    rid = first.run.id

    # Alice clicks approve on the first call (one process) ...
    loaded = await state.load(rid)
    assert loaded is not None
    loaded.record(ToolCallDecision.approve(a, decided_by="U_ALICE"))
    await state.save(loaded)
    # ... Bob edits the second (another process; agent.record validates the edit) ...
    loaded = await state.load(rid)
    assert loaded is not None and loaded.pending_tool_calls[0].decision is not None
    agent.record(loaded, ToolCallDecision.edit(b, {"environment": "staging", "version": "v3"}))
    await state.save(loaded)
    assert ledger.count("deploy") == 0  # recording never runs anything

    # ... and support answers the ticket, which completes the set and continues the run.
    backend.reply(text="done")
    done = await agent.continue_run(
        run_id=rid, state=state, tool_outputs=[AgentToolOutput(t, {"status": "closed"})]
    )
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING, {"environment": "staging", "version": "v3"}]
    results = backend.tool_results()
    assert results[t] == {"status": "closed"}
    assert results[b]["arguments_used"]["version"] == "v3"
    stored = await state.load(rid)
    assert stored is not None and stored.run.status == "completed"


# -- 5. approval policy at three levels, evaluated once -----------------------------------


async def test_5_tool_level_policy_function(
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


async def test_5_agent_wide_policy_and_tool_level_override(
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


async def test_5_call_level_policy_overrides_tool_level_and_is_evaluated_once(
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


# -- 6. human review ---------------------------------------------------------------------


async def test_6_human_review_pauses_and_input_joins_the_conversation(
    backend: Backend, make_agent: MakeAgent
) -> None:
    contexts: list[HumanReviewContext] = []

    def review(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
        contexts.append(ctx)
        if ctx.step == 1:
            return AgentHumanReviewRequest("Check the draft", payload={"draft": ctx.output})
        return None

    agent = make_agent([], human_review=review)
    backend.reply(text="Draft: all systems go")
    result = await agent.run("write the status update")
    assert result.run.status == "waiting_for_human"
    pause = result.run.pause
    assert pause is not None and pause.kind == "human_review" and pause.pending_tool_calls == []
    assert pause.review is not None and pause.review.reason == "Check the draft"
    assert pause.review.payload == {"draft": "Draft: all systems go"}
    ctx = contexts[0]
    assert (ctx.run_id, ctx.step, ctx.output) == (result.run.id, 1, "Draft: all systems go")
    assert ctx.response.message.content == "Draft: all systems go"
    assert [m.role for m in ctx.messages] == ["user", "assistant"]

    backend.reply(text="Final: all systems go, no incidents.")
    done = await agent.continue_run(run=result, human_input="Mention there were no incidents.")
    assert done.run.status == "completed"
    assert done.output == "Final: all systems go, no incidents."
    last = backend.messages[-1][-1]
    assert last == {"role": "user", "content": "Mention there were no incidents."}
    assert [c.step for c in contexts] == [1, 2]  # called on every model response


async def test_6_review_of_a_tool_call_turn(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    def review(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
        if ctx.response.message.tool_calls and ctx.step == 1:
            return AgentHumanReviewRequest("Plan check")
        return None

    agent = make_agent(ops.all, human_review=review)
    (s,) = backend.reply(tool_calls=[("get_status", {"service": "api"})])
    result = await agent.run("status?")
    assert result.run.pause is not None and result.run.pause.kind == "human_review"
    assert ledger.calls == []  # nothing ran before the review
    backend.reply(text="api is healthy")
    done = await agent.continue_run(run=result, human_input="Also check the db next time.")
    assert done.run.status == "completed" and ledger.count("get_status") == 1
    roles = [(m["role"], m.get("tool_call_id")) for m in backend.messages[-1][1:]]
    assert roles == [("user", None), ("assistant", None), ("tool", s), ("user", None)]


# -- 7. exactly one tool result per call before the next model call ----------------------


async def test_7_no_dangling_tool_calls_through_a_long_run(
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


async def test_7_repeated_call_ids_from_the_provider_get_distinct_ids(
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


# -- 10. state accessor: saves after every step; continue by id ---------------------------


class RecordingAccessor(InMemoryStateAccessor):
    def __init__(self) -> None:
        super().__init__()
        self.saved: list[RunResult] = []

    async def save(self, result: RunResult) -> None:
        await super().save(result)
        self.saved.append(RunResult.model_validate_json(result.model_dump_json()))


async def test_10_saves_every_step_and_continues_by_id(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools
) -> None:
    state = RecordingAccessor()
    agent = make_agent(ops.all)
    backend.reply(tool_calls=[("get_status", {"service": "api"})])
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    result = await agent.run("go", state=state)
    assert result.run.status == "waiting_for_human"
    assert (await state.load(result.run.id)) == result
    states = [(s.run.step, s.run.turn.calls[0].state if s.run.turn else None) for s in state.saved]
    assert (1, "started") in states and (1, "finished") in states
    assert states[-1] == (2, "pending")

    backend.reply(text="done")
    fresh = make_agent(ops.all)  # e.g. another process: only the id travels
    done = await fresh.continue_run(
        run_id=result.run.id, state=state, approvals=[AgentToolDecision(d)]
    )
    assert done.run.status == "completed"
    stored = await state.load(result.run.id)
    assert stored is not None and stored.run.status == "completed" and stored.output == "done"


# -- 11. max_steps, retries with backoff, failed runs retried ----------------------------


async def test_11_max_steps_fails_the_run(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all, max_steps=3)
    for i in range(5):
        backend.reply(tool_calls=[("get_status", {"service": f"s{i}"})])
    result = await agent.run("loop forever")
    assert result.run.status == "failed"
    assert result.run.error is not None and "max_steps=3" in result.run.error
    assert len(backend.requests) == 3 and ledger.count("get_status") == 3


async def test_11_retry_after_is_honoured(backend: Backend, make_agent: MakeAgent) -> None:
    agent = make_agent([])
    backend.fail(429, retry_after=0.15)
    backend.fail(503)
    backend.reply(text="hello")
    started = time.monotonic()
    result = await agent.run("hi")
    assert result.run.status == "completed" and result.output == "hello"
    assert time.monotonic() - started >= 0.15  # longer than backoff_max=0.01
    assert len(backend.requests) == 3
    assert result.run.usage.requests == 1


async def test_11_timeouts_are_retried(backend: Backend, ops: OpsTools) -> None:
    from bot import ModelSettings

    settings = ModelSettings(timeout=0.3, max_retries=1, backoff_base=0.001, backoff_max=0.01)
    agent = Agent(id="ops", model=backend.model, model_settings=settings)
    backend.hang(5)
    backend.reply(text="on time")
    started = time.monotonic()
    result = await agent.run("hi")
    assert result.run.status == "completed" and result.output == "on time"
    assert time.monotonic() - started < 2


async def test_11_failing_model_fails_the_run_with_last_good_state_then_retry(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)  # max_retries=2: three attempts
    backend.reply(tool_calls=[("get_status", {"service": "api"})])
    for _ in range(3):
        backend.fail(500)
    result = await agent.run("status", state=state)
    assert result.run.status == "failed"
    assert result.run.error is not None and "500" in result.run.error
    assert len(backend.requests) == 4
    stored = await state.load(result.run.id)
    assert stored is not None and stored.run.status == "failed"
    assert [m.role for m in stored.run.messages] == ["user", "assistant", "tool"]

    with pytest.raises(ValueError, match="is not waiting"):
        await agent.continue_run(run=stored)
    backend.reply(text="api is up")
    done = await agent.continue_run(run_id=result.run.id, state=state, retry=True)
    assert done.run.status == "completed" and done.output == "api is up"
    assert done.run.error is None
    assert ledger.count("get_status") == 1  # the tool is not run again
    assert backend.messages[-1][-1]["role"] == "tool"


async def test_11_non_retryable_errors_fail_at_once(
    backend: Backend, make_agent: MakeAgent
) -> None:
    backend.fail(401)
    backend.reply(text="unused")
    result = await make_agent([]).run("hi")
    assert result.run.status == "failed" and "401" in (result.run.error or "")
    assert len(backend.requests) == 1


# -- events, usage, cancel -----------------------------------------------------------------


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


async def test_cancel(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    result = await agent.run("deploy", state=state)
    cancelled = await agent.cancel(run_id=result.run.id, state=state, reason="Changed my mind")
    assert cancelled.run.status == "cancelled" and cancelled.run.error == "Changed my mind"
    assert cancelled.run.pause is None
    stored = await state.load(result.run.id)
    assert stored is not None and stored.run.status == "cancelled"
    with pytest.raises(ValueError, match="not waiting"):
        await agent.continue_run(
            run_id=result.run.id, state=state, approvals=[AgentToolDecision(d)]
        )
    with pytest.raises(ValueError, match="already ended"):
        await agent.cancel(run=cancelled)
    assert ledger.count("deploy") == 0 and len(backend.requests) == 1
