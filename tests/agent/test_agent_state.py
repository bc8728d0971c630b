"""Rule 9/10: state is plain versioned data; the accessor protocol; agent ids."""

from __future__ import annotations

import json

import pytest

from bot import (
    SCHEMA_VERSION,
    Agent,
    AgentStateAccessor,
    AgentToolDecision,
    InMemoryStateAccessor,
    RunResult,
    ToolCallDecision,
)
from bot.agent import UnknownSchemaVersionError
from tests.agent.backends import Backend
from tests.agent.ops import STAGING, OpsTools


async def test_9_json_round_trip_then_continue(backend: Backend, ops: OpsTools) -> None:
    agent = Agent(id="ops", model=backend.model, tools=ops.all)
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    result = await agent.run("deploy", context={"requested_by": "U123", "n": [1, 2]})
    result.record(ToolCallDecision.approve(d, decided_by="U_ALICE"))

    raw = result.model_dump_json()
    data = json.loads(raw)
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert data["run"]["status"] == "waiting_for_human"
    restored = RunResult.model_validate_json(raw)
    assert restored == result
    assert restored.model_dump_json() == raw
    assert restored.pending_tool_calls[0].decision is not None
    assert restored.pending_tool_calls[0].decision.decided_by == "U_ALICE"

    backend.reply(text="done")
    done = await agent.continue_run(run=restored)  # the recorded decision is enough
    assert done.run.status == "completed"
    assert RunResult.model_validate(json.loads(done.model_dump_json())) == done


async def test_9_unknown_schema_version(backend: Backend, ops: OpsTools) -> None:
    agent = Agent(id="ops", model=backend.model, tools=ops.all)
    backend.reply(tool_calls=[("deploy", STAGING)])
    data = json.loads((await agent.run("deploy")).model_dump_json())
    data["schema_version"] = 99
    with pytest.raises(UnknownSchemaVersionError, match="Unknown run state schema version 99"):
        RunResult.model_validate_json(json.dumps(data))
    with pytest.raises(UnknownSchemaVersionError, match="version 99"):
        RunResult.model_validate(data)
    with pytest.raises(ValueError, match="schema version 99"):  # still a ValueError
        RunResult.model_validate(data)
    state = InMemoryStateAccessor()
    state._runs["old"] = json.dumps(data)
    with pytest.raises(UnknownSchemaVersionError):
        await agent.continue_run(run_id="old", state=state)


async def test_9_context_must_be_json_serializable(backend: Backend) -> None:
    agent = Agent(id="ops", model=backend.model)
    with pytest.raises(ValueError, match="JSON-serializable"):
        await agent.run("hi", context={"when": object()})
    assert backend.requests == []


async def test_9_only_the_same_agent_id_continues(backend: Backend, ops: OpsTools) -> None:
    state = InMemoryStateAccessor()
    agent = Agent(id="ops", model=backend.model, tools=ops.all)
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    result = await agent.run("deploy", state=state)
    impostor = Agent(id="ops2", model=backend.model, tools=ops.all)
    with pytest.raises(ValueError, match="cannot continue it"):
        await impostor.continue_run(
            run_id=result.run.id, state=state, approvals=[AgentToolDecision(d)]
        )
    with pytest.raises(ValueError, match="cannot continue it"):
        await impostor.cancel(run=result)
    with pytest.raises(ValueError, match="cannot continue it"):
        await impostor.recover(run=result)


async def test_10_in_memory_accessor() -> None:
    state = InMemoryStateAccessor()
    assert isinstance(state, AgentStateAccessor)
    assert await state.load("missing") is None
    agent = Agent(id="echo", model="scripted:echo")
    result = await agent.run("hello", state=state, run_id="r1")
    assert len(state) == 1
    loaded = await state.load("r1")
    assert loaded == result and loaded is not result  # a copy, not the same object
    assert loaded is not None
    loaded.output = "changed"
    again = await state.load("r1")
    assert again is not None and again.output == "You said: hello"


async def test_10_run_is_saved_before_the_first_model_call(backend: Backend) -> None:
    state = InMemoryStateAccessor()
    agent = Agent(id="ops", model=backend.model)
    seen: list[str | None] = []

    original = backend.model.request

    async def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        stored = await state.load("r1")
        seen.append(stored.run.status if stored else None)
        return await original(*args, **kwargs)

    backend.model.request = spy  # type: ignore[method-assign]
    backend.reply(text="hi")
    await agent.run("hi", state=state, run_id="r1")
    assert seen == ["running"]


def test_complete_history_drops_an_unfinished_turn() -> None:
    from bot.agent.messages import Message, ToolCall, complete_history

    user = Message(role="user", content="deploy")
    calls = Message(
        role="assistant",
        tool_calls=[ToolCall(id="a", name="x"), ToolCall(id="b", name="y")],
    )
    first = Message(role="tool", tool_call_id="a", content="ok")
    second = Message(role="tool", tool_call_id="b", content="ok")
    done = Message(role="assistant", content="done")
    whole = [user, calls, first, second, done]
    assert complete_history(whole) == whole
    assert complete_history([user, calls, first]) == [user]
    assert complete_history([user, calls]) == [user]
