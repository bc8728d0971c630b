"""A LangChain v1 agent run by `/sayso` (bot.adapters.langgraph.agent): the actions of its
HumanInTheLoopMiddleware interrupts are the run's cards, a click on a freshly started bot
(a new agent object: its thread comes from the database) continues it once, an edit is
validated against the tool's schema, a rejection's reason reaches the model, and a thread
reply continues the conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.adapters import as_agent
from bot.adapters.langgraph import LangGraphAgent
from bot.adapters.langgraph_threads import export_thread, graph_on, import_thread, new_thread
from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness, has_button, message_text
from tests.e2e.langgraph_agents import ASKED, runs, scaling_agent
from tests.helpers.views import filled_views


def scaler(runs_file: Path, **kw: Any) -> LangGraphAgent:
    """The scaling agent without a checkpointer of its own, as a sayso agent."""
    return LangGraphAgent(scaling_agent(None, runs_file, **kw), "scaler", approvers=["U_APPROVER"])


async def start(h: Harness, agent: LangGraphAgent) -> dict[str, Any]:
    await h.stop_bot()
    await h.start_bot([agent])
    await h.sandbox.slash_command("U_REQUESTER", "scaler scale api to 2")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    return h.cards()[0]


async def restart(h: Harness, agent: LangGraphAgent) -> None:
    """A fresh bot and agent object: what continues the run is in the database."""
    await h.stop_bot()
    await h.start_bot([agent])


async def test_approved_on_a_fresh_bot_the_tool_runs_once(harness: Harness, tmp_path: Path) -> None:
    h = harness
    card = await start(h, scaler(tmp_path / "first"))
    assert "Scale a service." in message_text(card)  # the tool's description
    await restart(h, scaler(tmp_path / "fresh"))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "tool said: api x2")
    await h.idle()
    assert runs(tmp_path / "first") == [] and runs(tmp_path / "fresh") == [ASKED]
    assert h.bot is not None
    assert [r.status for r in await h.bot.store.runs.list()] == ["completed"]


async def test_edited_on_a_fresh_bot_validated_against_the_schema(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    card = await start(h, scaler(tmp_path / "first"))
    assert has_button(card, "edit")  # the tool's argument schema makes the Edit form
    await restart(h, scaler(tmp_path / "fresh"))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    d = await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "11"})  # le=10
    assert d.status == 200 and d.body["response_action"] == "errors"
    assert h.bot is not None
    assert (await h.bot.store.runs.list())[0].status == "waiting_for_human"
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "5"})
    await wait_answer(h, "tool said: api x5")
    await h.idle()
    assert runs(tmp_path / "first") == []
    assert runs(tmp_path / "fresh") == [{"service": "api", "replicas": 5}]


async def test_rejected_on_a_fresh_bot_the_model_reads_the_reason(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    card = await start(h, scaler(tmp_path / "first", allowed=["approve", "reject"]))
    assert not has_button(card, "edit")  # the middleware allows approve and reject
    await restart(h, scaler(tmp_path / "fresh", allowed=["approve", "reject"]))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "freeze until Monday"})
    await wait_answer(
        h, "tool said: User rejected the tool call for `scale` with reason: freeze until Monday"
    )
    assert runs(tmp_path / "first") == runs(tmp_path / "fresh") == []


async def test_a_thread_reply_continues_the_conversation(harness: Harness, tmp_path: Path) -> None:
    h = harness
    card = await start(h, scaler(tmp_path / "runs"))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "tool said: api x2")
    await h.idle()
    await h.sandbox.post_message("U_REQUESTER", "and the workers?", thread_ts=h.root()["ts"])
    await wait_answer(h, "you said: and the workers? (request 2)")  # the earlier request too
    assert runs(tmp_path / "runs") == [ASKED]


def test_sayso_agents_may_name_the_graph_itself(tmp_path: Path) -> None:
    graph = scaling_agent(None, tmp_path / "runs", allowed=["approve", "reject"], name="Scaler")
    agent = as_agent(graph)
    assert isinstance(agent, LangGraphAgent) and agent.id == "scaler"
    assert agent.tools["scale"].allowed_decisions == ("approve", "reject")
    assert agent.tools["scale"].parameters["properties"]["replicas"]["maximum"] == 10


async def test_per_call_interrupts_edited_on_a_fresh_bot(harness: Harness, tmp_path: Path) -> None:
    h = harness
    card = await start(h, scaler(tmp_path / "first", mode="per_call"))
    await restart(h, scaler(tmp_path / "fresh", mode="per_call"))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "3"})
    await wait_answer(h, "tool said: api x3")
    assert runs(tmp_path / "fresh") == [{"service": "api", "replicas": 3}]


async def test_a_thread_survives_json(tmp_path: Path) -> None:
    """The saved thread is plain JSON; imported, it has the same interrupt, by the same id."""
    graph = scaling_agent(None, tmp_path / "runs")
    saver, config = new_thread()
    await graph_on(graph, saver).ainvoke({"messages": [("user", "scale api")]}, config)
    before = await graph_on(graph, saver).aget_state(config)
    saved = json.loads(json.dumps(export_thread(saver, config)))
    again, config_again = import_thread(saved)
    after = await graph_on(graph, again).aget_state(config_again)
    assert [i.id for i in after.interrupts] == [i.id for i in before.interrupts] != []
    assert after.values["messages"] == before.values["messages"]
    assert after.next == before.next
