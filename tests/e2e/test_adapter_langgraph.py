"""The LangGraph adapter (bot.adapters.langgraph) against the real bot: a LangChain v1 agent
whose HumanInTheLoopMiddleware interrupts become cards, approved, edited (the modal validates
against the tool's schema) and rejected through sandbox clicks, its thread kept by a SQLite
checkpointer; a driver killed after the card is posted is replaced by a fresh process that
finds the same card, and the tool runs once."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Interrupt

from bot.adapters.langgraph import (
    NO_DECISION,
    decision_of,
    idempotency_key,
    resolve,
    run_with_approvals,
)
from bot.adapters.langgraph_hitl import actions_of, title_of
from bot.client import ApprovalExpired, AsyncSaysoClient
from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, has_button, message_text
from tests.e2e.langgraph_agents import ASKED, ScriptedChatModel, runs, scaling_agent
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually

PROMPT = {"messages": [{"role": "user", "content": "scale api"}]}
ROOT = Path(__file__).parents[2]


def cards(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.sandbox.messages("C_GENERAL") if has_button(m, "reject")]


async def one_card(h: Harness) -> dict[str, Any]:
    return (await h.sandbox.wait_for(lambda sb: cards(h) or None, timeout=10))[0]


def thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as s:
        yield s


async def test_approved_the_tool_runs_once(
    harness: Harness, saver: AsyncSqliteSaver, tmp_path: Path
) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran = tmp_path / "runs"
    agent = scaling_agent(saver, ran)
    running = asyncio.create_task(
        run_with_approvals(agent, PROMPT, thread("t1"), client, channel="C_GENERAL")
    )
    card = await one_card(h)
    text = message_text(card)  # the middleware's description, the arguments
    assert "Tool execution requires approval" in text and '"replicas": 2' in text
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    state = await asyncio.wait_for(running, 20)
    assert state["messages"][-1].content == "tool said: api x2"
    assert runs(ran) == [ASKED]
    assert (await agent.aget_state(thread("t1"))).interrupts == ()


async def test_edited_in_the_modal_validated_against_the_tool_schema(
    harness: Harness, saver: AsyncSqliteSaver, tmp_path: Path
) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran = tmp_path / "runs"
    agent = scaling_agent(saver, ran)
    running = asyncio.create_task(
        run_with_approvals(agent, PROMPT, thread("t1"), client, channel="C_GENERAL")
    )
    card = await one_card(h)
    assert has_button(card, "edit")  # the tool's argument schema, found in the graph
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "11"})  # le=10
    assert "replicas" in h.sandbox.view_errors(view["id"])
    assert h.sandbox.view_is_open(view["id"]) and not running.done()
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "5"})
    state = await asyncio.wait_for(running, 20)
    assert state["messages"][-1].content == "tool said: api x5"
    assert runs(ran) == [{"service": "api", "replicas": 5}]


async def test_rejected_the_model_sees_the_reason(harness: Harness, tmp_path: Path) -> None:
    """The sync SqliteSaver works too: the graph then runs on a worker thread."""
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran = tmp_path / "runs"
    connection = sqlite3.connect(tmp_path / "sync.db", check_same_thread=False)
    try:
        agent = scaling_agent(SqliteSaver(connection), ran, allowed=["approve", "reject"])
        running = asyncio.create_task(
            run_with_approvals(agent, PROMPT, thread("t1"), client, channel="C_GENERAL")
        )
        card = await one_card(h)
        assert not has_button(card, "edit")  # the review config allows approve and reject
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "freeze until Monday"})
        state = await asyncio.wait_for(running, 20)
    finally:
        connection.close()
    assert state["messages"][-1].content == (
        "tool said: User rejected the tool call for `scale` with reason: freeze until Monday"
    )
    assert runs(ran) == []


async def test_per_call_interrupts_are_answered_by_id(
    harness: Harness, saver: AsyncSqliteSaver, tmp_path: Path
) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran = tmp_path / "runs"
    agent = scaling_agent(saver, ran, mode="per_call")
    running = asyncio.create_task(
        run_with_approvals(agent, PROMPT, thread("t1"), client, channel="C_GENERAL")
    )
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "3"})
    state = await asyncio.wait_for(running, 20)
    assert state["messages"][-1].content == "tool said: api x3"
    assert runs(ran) == [{"service": "api", "replicas": 3}]


class Driver:
    """tests/e2e/langgraph_driver.py in its own process (any still running at the end of the
    test is killed)."""

    def __init__(self, h: Harness, token: str, tmp_path: Path, hang: float = 0) -> None:
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SAYSO_URL": h.url,
            "SAYSO_KEY": token,
            "HANG": str(hang),
        }
        self.args = [str(tmp_path / "checkpoints.db"), str(tmp_path / "runs"), "deploy-42"]
        self.processes: list[asyncio.subprocess.Process] = []

    async def start(self, mode: str) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.e2e.langgraph_driver",
            mode,
            *self.args,
            env=self.env,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self.processes.append(process)
        return process

    async def kill_all(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def finished(process: asyncio.subprocess.Process) -> str:
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    except TimeoutError:
        raise AssertionError("the driver did not finish in 60 s") from None
    assert process.returncode == 0, err.decode()[-3000:]
    return out.decode()


@pytest.mark.slow
async def test_a_killed_driver_is_replaced_without_a_second_card(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    token, _ = await make_key(h)
    driver = Driver(h, token, tmp_path)
    try:
        await killed_and_replaced(h, driver, tmp_path)
    finally:
        await driver.kill_all()


async def killed_and_replaced(h: Harness, driver: Driver, tmp_path: Path) -> None:
    first = await driver.start("run")
    card = (await h.sandbox.wait_for(lambda sb: cards(h) or None, timeout=60))[0]
    first.send_signal(signal.SIGKILL)
    await first.wait()
    assert first.returncode == -signal.SIGKILL

    # Decided while no driver runs: the fresh process finds the request and its decision.
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "4"})
    await eventually(lambda: not has_button(h.sandbox.message("C_GENERAL", card["ts"])))

    output = await finished(await driver.start("run"))
    assert "final: tool said: api x4" in output
    assert len(cards(h)) == 0 and len(asked_cards(h)) == 1
    assert runs(tmp_path / "runs") == [{"service": "api", "replicas": 4}]

    # Once more: nothing is pending, nothing is asked or run again.
    output = await finished(await driver.start("resolve"))
    assert "final: tool said: api x4" in output
    assert len(asked_cards(h)) == 1
    assert runs(tmp_path / "runs") == [{"service": "api", "replicas": 4}]


@pytest.mark.slow
async def test_a_driver_killed_inside_the_tool_is_never_rerun(
    harness: Harness, tmp_path: Path
) -> None:
    """Killed while the approved tool runs: the next driver stops with ToolsMayHaveRun rather
    than run it again (nor ask again: the decision was applied)."""
    h = harness
    token, _ = await make_key(h)
    driver = Driver(h, token, tmp_path, hang=120)
    try:
        first = await driver.start("run")
        card = (await h.sandbox.wait_for(lambda sb: cards(h) or None, timeout=60))[0]
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        await eventually(lambda: runs(tmp_path / "runs"), timeout=20, what="the tool to run")
        first.kill()
        await first.wait()
        output = await finished(await driver.start("resolve"))
        assert "stopped:" in output and "may have run" in output
        assert runs(tmp_path / "runs") == [ASKED] and len(asked_cards(h)) == 1
    finally:
        await driver.kill_all()


def asked_cards(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.sandbox.messages("C_GENERAL") if "scale" in message_text(m)]


async def test_nothing_pending_resolves_to_the_state(
    harness: Harness, saver: AsyncSqliteSaver, tmp_path: Path
) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    agent = scaling_agent(saver, tmp_path / "runs")
    assert await resolve(agent, thread("never-started"), client) == {}
    assert h.sandbox.messages("C_GENERAL") == []


def test_actions_keys_and_decisions() -> None:
    """The translation alone: HITLRequest actions, their keys, the middleware's decisions."""
    from bot.client import Decision, RequestState

    value = {
        "action_requests": [
            {"name": "scale", "args": {"replicas": 2}},
            {"name": "drop", "args": {"table": "users"}, "description": "Drop a table"},
        ],
        "review_configs": [
            {"action_name": "drop", "allowed_decisions": ["approve"]},
            {"action_name": "scale", "allowed_decisions": ["approve", "edit", "reject"]},
        ],
    }
    interrupt = Interrupt(value, id="abc")
    (scale, scale_config), (drop, drop_config) = actions_of(interrupt)
    assert (scale["name"], scale_config["action_name"]) == ("scale", "scale")
    assert (drop["name"], drop_config["allowed_decisions"]) == ("drop", ["approve"])
    assert (title_of(scale), title_of(drop)) == ("Run scale", "Drop a table")
    assert [idempotency_key(interrupt, i) for i in (0, 1)] == ["langgraph:abc:0", "langgraph:abc:1"]

    edited = Decision(type="edit", arguments={"replicas": 3})
    assert decision_of(scale, scale_config, edited) == {
        "type": "edit",
        "edited_action": {"name": "scale", "args": {"replicas": 3}},
    }
    same = Decision(type="approve", arguments={"replicas": 2})
    assert decision_of(scale, scale_config, same) == {"type": "approve"}
    with pytest.raises(TypeError, match="not HumanInTheLoopMiddleware"):
        actions_of(Interrupt("What is the budget?", id="q"))
    now = datetime.now(UTC)
    expired = ApprovalExpired(
        RequestState(
            id="r", kind="approval", status="expired", decision=None, created_at=now, expires_at=now
        )
    )
    assert decision_of(scale, scale_config, expired) == {"type": "reject", "message": NO_DECISION}
    with pytest.raises(ApprovalExpired):  # an approve-only action cannot be rejected
        decision_of(drop, drop_config, expired)


def docs_example() -> str:
    text = (ROOT / "docs" / "integrations.md").read_text()
    section = text.split("\n## LangGraph / LangChain v1\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


async def test_the_docs_example_runs(
    harness: Harness,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The example as written, but on the scripted model and the sandbox's channel."""
    h = harness
    token, _ = await make_key(h)
    code = docs_example()
    assert '"openai:gpt-4.1"' in code and "C0123DEPLOY" in code
    code = code.replace('"openai:gpt-4.1"', "scripted_model").replace("C0123DEPLOY", "C_GENERAL")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAYSO_URL", h.url)
    monkeypatch.setenv("SAYSO_KEY", token)
    namespace = {"__name__": "example", "scripted_model": ScriptedChatModel()}
    running = asyncio.create_task(asyncio.to_thread(exec, code, namespace))
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await asyncio.wait_for(running, 20)
    assert "tool said: api now runs 2 replicas" in capsys.readouterr().out
    assert (tmp_path / "agent-threads.db").exists()


async def test_a_breakpoint_is_not_passed(
    harness: Harness, saver: AsyncSqliteSaver, tmp_path: Path
) -> None:
    """A static breakpoint is the graph owner's gate, not an approval: once the middleware's
    action is approved, resolve stops at the breakpoint before the tool, with an error."""
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran = tmp_path / "runs"
    graph = scaling_agent(None, ran)
    gated = graph.copy(update={"checkpointer": saver, "interrupt_before_nodes": ["tools"]})
    running = asyncio.create_task(
        run_with_approvals(gated, PROMPT, thread("t1"), client, channel="C_GENERAL")
    )
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    with pytest.raises(ValueError, match="breakpoint"):
        await asyncio.wait_for(running, 20)
    assert runs(ran) == []
    assert (await gated.aget_state(thread("t1"))).next == ("tools",)
