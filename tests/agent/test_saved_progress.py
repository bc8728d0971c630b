"""The state accessor: a run is saved after every step and continues by id elsewhere.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

from bot import (
    AgentToolDecision,
    InMemoryStateAccessor,
    RunResult,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import STAGING, OpsTools


class RecordingAccessor(InMemoryStateAccessor):
    def __init__(self) -> None:
        super().__init__()
        self.saved: list[RunResult] = []

    async def save(self, result: RunResult) -> None:
        await super().save(result)
        self.saved.append(RunResult.model_validate_json(result.model_dump_json()))


async def test_saves_every_step_and_continues_by_id(
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
    # saved started before the body runs; its result saved right after (with the turn it
    # closes: the last call of a turn is saved finished by the save that closes the turn)
    started = states.index((1, "started"))
    assert states[started + 1] == (1, None)
    after = state.saved[started + 1].run.messages
    assert after[-1].role == "tool" and "api" in (after[-1].content or "")
    assert states[-1] == (2, "pending")

    backend.reply(text="done")
    fresh = make_agent(ops.all)  # e.g. another process: only the id travels
    done = await fresh.continue_run(
        run_id=result.run.id, state=state, approvals=[AgentToolDecision(d)]
    )
    assert done.run.status == "completed"
    stored = await state.load(result.run.id)
    assert stored is not None and stored.run.status == "completed" and stored.output == "done"
