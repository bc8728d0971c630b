"""Rule 8: side effects are never repeated silently.

A call's progress is saved before its body starts. When the process dies inside a tool body,
`recover()` does not run the body again: the run pauses with the call pending approval and
marked `interrupted`, and a person decides (approve runs it once more, reject does not).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from bot import Agent, AgentToolDecision, InMemoryStateAccessor, RunResult, ToolContext, tool
from bot.agent.models import OpenAIChatModel
from tests.agent.backends import FAST, Backend
from tests.agent.ops import STAGING, Ledger
from tests.helpers.waiting import eventually

REPO = Path(__file__).resolve().parents[2]


class ProcessDied(BaseException):
    """Stands for the process dying: not an Exception, so nothing in the runtime catches it."""


def dying_deploy(ledger: Ledger, die_times: int) -> Any:
    deaths = {"left": die_times}

    @tool
    async def deploy(environment: str, version: str, ctx: ToolContext) -> dict:
        """Deploy (an automatic tool here: no approval was needed the first time)."""
        ledger.add("deploy", environment=environment, key=ctx.idempotency_key)
        if deaths["left"] > 0:
            deaths["left"] -= 1
            raise ProcessDied()
        return {"deployed": version}

    return deploy


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_8_died_inside_a_tool_body(backend: Backend, ledger: Ledger, decision: str) -> None:
    @tool
    def get_status(service: str) -> str:
        ledger.add("get_status")
        return "up"

    state = InMemoryStateAccessor()
    tools = [dying_deploy(ledger, die_times=1), get_status]
    agent = Agent(id="ops", model=backend.model, tools=tools, model_settings=FAST)
    s, d = backend.reply(tool_calls=[("get_status", {"service": "api"}), ("deploy", STAGING)])
    with pytest.raises(ProcessDied):
        await agent.run("deploy", state=state, run_id="run-1")

    saved = await state.load("run-1")
    assert saved is not None and saved.run.status == "running"
    assert saved.run.turn is not None
    assert [c.state for c in saved.run.turn.calls] == ["finished", "started"]

    # A new process (a new agent object) picks the run up from the saved state.
    agent2 = Agent(id="ops", model=backend.model, tools=tools, model_settings=FAST)
    result = await agent2.recover(run_id="run-1", state=state)
    assert result.run.status == "waiting_for_human"
    assert result.run.pause is not None and result.run.pause.kind == "tool_approval"
    (pending,) = result.pending_tool_calls
    assert (pending.call.id, pending.kind, pending.interrupted) == (d, "approval", True)
    assert ledger.count("deploy") == 1  # not run again on its own
    assert ledger.count("get_status") == 1  # the finished call is not repeated either
    assert len(backend.requests) == 1
    stored = await state.load("run-1")
    assert stored is not None and stored.run.status == "waiting_for_human"

    backend.reply(text="done")
    if decision == "approve":
        done = await agent2.continue_run(
            run_id="run-1", state=state, approvals=[AgentToolDecision(d)]
        )
        assert ledger.count("deploy") == 2  # once more, deliberately
        assert ledger.args("deploy")[0]["key"] == ledger.args("deploy")[1]["key"] == f"run-1:{d}"
        assert backend.tool_results()[d] == {"deployed": "v2"}
    else:
        done = await agent2.continue_run(
            run_id="run-1", state=state, rejections=[AgentToolDecision(d, "Already deployed")]
        )
        assert ledger.count("deploy") == 1
        assert backend.tool_results()[d] == {"error": "Already deployed"}
    assert done.run.status == "completed"
    assert backend.tool_results()[s] == "up"


async def test_8_task_cancelled_inside_an_approved_tool_body(
    backend: Backend, ledger: Ledger
) -> None:
    started = asyncio.Event()

    @tool(require_approval=True)
    async def deploy(environment: str, version: str) -> str:
        ledger.add("deploy")
        started.set()
        await asyncio.sleep(30)  # a long body: the task is cancelled inside it
        return "ok"

    state = InMemoryStateAccessor()
    agent = Agent(id="ops", model=backend.model, tools=[deploy], model_settings=FAST)
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    paused = await agent.run("deploy", state=state)

    task = asyncio.create_task(
        agent.continue_run(run_id=paused.run.id, state=state, approvals=[AgentToolDecision(d)])
    )
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    result = await agent.recover(run_id=paused.run.id, state=state)
    (pending,) = result.pending_tool_calls
    assert pending.interrupted and pending.kind == "approval" and pending.call.id == d
    assert ledger.count("deploy") == 1
    with pytest.raises(ValueError, match="not running"):
        await agent.recover(run=result)


CHILD = textwrap.dedent(
    '''
    """A worker process: starts a run whose tool body is killed with SIGKILL."""
    import asyncio
    import json
    import sys
    import time
    from pathlib import Path

    from bot import Agent, RunResult, ToolContext, tool
    from bot.agent.models import OpenAIChatModel


    class FileStateAccessor:
        def __init__(self, root):
            self.root = Path(root)

        async def load(self, run_id):
            path = self.root / f"{run_id}.json"
            return RunResult.model_validate_json(path.read_text()) if path.exists() else None

        async def save(self, result):
            tmp = self.root / f"{result.run.id}.json.tmp"
            tmp.write_text(result.model_dump_json())
            tmp.replace(self.root / f"{result.run.id}.json")


    def make_agent(base_url, marker):
        @tool
        def deploy(environment: str, version: str, ctx: ToolContext) -> dict:
            """Deploy."""
            with open(marker, "a") as f:
                f.write(ctx.idempotency_key + "\\n")
            if Path(marker).read_text().count("\\n") == 1:
                time.sleep(60)  # the first time: wait to be killed
            return {"deployed": version}

        model = OpenAIChatModel("gpt-4o-mini", base_url=base_url, api_key="test")
        return Agent(id="ops", model=model, tools=[deploy])


    if __name__ == "__main__":
        base_url, root, marker = sys.argv[1:4]
        agent = make_agent(base_url, marker)
        asyncio.run(agent.run("deploy v2", state=FileStateAccessor(root), run_id="killed"))
    '''
)


async def test_8_process_killed_with_sigkill(tmp_path: Path, server: Any) -> None:
    script = tmp_path / "worker.py"
    script.write_text(CHILD)
    marker = tmp_path / "bodies.txt"
    root = tmp_path / "runs"
    root.mkdir()
    (d,) = server.reply(tool_calls=[("deploy", STAGING)])

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(  # noqa: ASYNC220 (we poll it without blocking the loop)
        [sys.executable, str(script), server.base_url, str(root), str(marker)], env=env
    )
    try:
        await eventually(
            lambda: marker.exists() or proc.poll() is not None,
            timeout=10,
            interval=0.01,
            what="the worker to start the tool body",
        )
        assert marker.exists(), "the worker exited before the tool body started"
        os.kill(proc.pid, signal.SIGKILL)
        await asyncio.to_thread(proc.wait, 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    spec = importlib.util.spec_from_file_location("sayso_worker", script)
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    state = worker.FileStateAccessor(root)
    saved: RunResult = await state.load("killed")
    assert saved.run.status == "running"

    agent = worker.make_agent(server.base_url, str(marker))
    result = await agent.recover(run_id="killed", state=state)
    assert result.run.status == "waiting_for_human"
    (pending,) = result.pending_tool_calls
    assert (pending.call.id, pending.kind, pending.interrupted) == (d, "approval", True)
    assert marker.read_text().splitlines() == [f"killed:{d}"]  # the body ran once
    reloaded = await state.load("killed")
    assert reloaded.run.status == "waiting_for_human" and reloaded.pending_tool_calls[0].interrupted

    server.reply(text="Deployed v2.")
    done = await agent.continue_run(run_id="killed", state=state, approvals=[AgentToolDecision(d)])
    assert done.run.status == "completed" and done.output == "Deployed v2."
    assert marker.read_text().splitlines() == [f"killed:{d}", f"killed:{d}"]
    assert server.violations == []
    model = agent.model_client
    assert isinstance(model, OpenAIChatModel)
    await model.aclose()


async def test_8_an_edited_call_interrupted_runs_again_with_the_edited_arguments(
    backend: Backend, ledger: Ledger
) -> None:
    """A reviewer replaced v2 by v3, the process died inside the body: the interrupted call
    shows v3 and, approved, runs v3 again (never the v2 the reviewer had replaced)."""
    from bot import AgentToolEdit

    deaths = {"left": 1}

    @tool(require_approval=True)
    async def deploy(environment: str, version: str) -> dict:
        ledger.add("deploy", environment=environment, version=version)
        if deaths["left"] > 0:
            deaths["left"] -= 1
            raise ProcessDied()
        return {"deployed": version}

    state = InMemoryStateAccessor()
    agent = Agent(id="ops", model=backend.model, tools=[deploy], model_settings=FAST)
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    paused = await agent.run("deploy", state=state, run_id="run-1")
    edit = AgentToolEdit(d, {"environment": "staging", "version": "v3"}, decided_by="U1")
    with pytest.raises(ProcessDied):
        await agent.continue_run(run=paused, state=state, edits=[edit])
    assert [a["version"] for a in ledger.args("deploy")] == ["v3"]

    result = await agent.recover(run_id="run-1", state=state)
    (pending,) = result.pending_tool_calls
    assert pending.interrupted and pending.call.arguments["version"] == "v3"

    backend.reply(text="done")
    done = await agent.continue_run(run=result, state=state, approvals=[AgentToolDecision(d)])
    assert done.run.status == "completed"
    assert [a["version"] for a in ledger.args("deploy")] == ["v3", "v3"]
    outcome = backend.tool_results()[d]
    assert outcome["arguments_used"]["version"] == "v3"  # the model learns what ran
