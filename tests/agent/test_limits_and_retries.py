"""max_steps, model retries with backoff (Retry-After, timeouts), and failed runs retried.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import time

import pytest

from bot import (
    Agent,
    InMemoryStateAccessor,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import Ledger, OpsTools


async def test_max_steps_fails_the_run(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all, max_steps=3)
    for i in range(5):
        backend.reply(tool_calls=[("get_status", {"service": f"s{i}"})])
    result = await agent.run("loop forever")
    assert result.run.status == "failed"
    assert result.run.error is not None and "max_steps=3" in result.run.error
    assert len(backend.requests) == 3 and ledger.count("get_status") == 3


async def test_retry_after_is_honoured(backend: Backend, make_agent: MakeAgent) -> None:
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


async def test_timeouts_are_retried(backend: Backend, ops: OpsTools) -> None:
    from bot import ModelSettings

    settings = ModelSettings(timeout=0.3, max_retries=1, backoff_base=0.001, backoff_max=0.01)
    agent = Agent(id="ops", model=backend.model, model_settings=settings)
    backend.hang(5)
    backend.reply(text="on time")
    started = time.monotonic()
    result = await agent.run("hi")
    assert result.run.status == "completed" and result.output == "on time"
    assert time.monotonic() - started < 2


async def test_failing_model_fails_the_run_with_last_good_state_then_retry(
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


async def test_non_retryable_errors_fail_at_once(backend: Backend, make_agent: MakeAgent) -> None:
    backend.fail(401)
    backend.reply(text="unused")
    result = await make_agent([]).run("hi")
    assert result.run.status == "failed" and "401" in (result.run.error or "")
    assert len(backend.requests) == 1
