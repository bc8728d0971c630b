"""ask_human through MCP elicitation, driven by the `mcp` SDK's own client with an
elicitation_callback: over stdio a client that shows forms gets the question as a form
(`elicitation/create`, form mode, one required `answer` string), and the answer is recorded on
the question's sayso request, decided by the API key; declined, cancelled or left blank, the
question goes to Slack. Over HTTP (stateless: no back-channel) the form is never shown. A
client without elicitation is asked in Slack over both transports (test_mcp_server.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp.types as mcp_types
import pytest
from mcp.client.context import ClientRequestContext

from tests.e2e.api_flows import make_key
from tests.e2e.audit import audit_events_of
from tests.e2e.mcp_flows import CLIENT, Mcp, answer_in_thread, call

QUESTION = "Which region should the new cluster run in?"


class Form:
    """A client's user at its elicitation form: answers with `action` (and `content`)."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.shown: list[mcp_types.ElicitRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        self.shown.append(params)
        return mcp_types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


@pytest.mark.parametrize("mcp", ["stdio"], indirect=True)
async def test_ask_human_is_answered_in_the_clients_form(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    form = Form("accept", {"answer": "eu-west-1"})
    async with mcp.session(token, elicitation=form) as session:
        state = await call(session, "ask_human", question=QUESTION, wait_seconds=30)
        assert state["status"] == "answered" and state["kind"] == "question"
        # the same sayso request, read back by its id
        again = await call(session, "get_decision", id=state["id"], wait_seconds=0)
    assert again == state
    decision = state["decision"]
    assert decision["answer"] == "eu-west-1"
    assert decision["decided_by"] == "api:ci"  # the key, never a Slack user
    assert decision["reason"] == f"Answered in {CLIENT.name} (MCP elicitation)."
    (shown,) = form.shown
    assert isinstance(shown, mcp_types.ElicitRequestFormParams) and shown.message == QUESTION
    schema = shown.requested_schema
    assert schema["required"] == ["answer"]
    assert schema["properties"]["answer"]["type"] == "string"
    assert schema["properties"]["answer"]["minLength"] == 1
    assert h.sandbox.messages("C_GENERAL") == []  # no card: nobody in Slack is asked
    assert h.bot is not None
    events = await audit_events_of(h.bot.store, "api:ci")
    assert [(a, o) for a, o, _ in events] == [("api_request", "ok"), ("decide", "won")]


@pytest.mark.parametrize("mcp", ["stdio"], indirect=True)
@pytest.mark.parametrize(
    ("action", "content"),
    [("decline", None), ("cancel", None), ("accept", {"answer": "   "})],
    ids=["declined", "cancelled", "blank"],
)
async def test_a_declined_form_sends_the_question_to_slack(
    mcp: Mcp, action: str, content: dict[str, Any] | None
) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    form = Form(action, content)
    async with mcp.session(token, elicitation=form) as session:
        answer = asyncio.create_task(call(session, "ask_human", question=QUESTION, wait_seconds=30))
        await answer_in_thread(h, QUESTION, "us-east-2")
        state = await asyncio.wait_for(answer, 10)
    assert len(form.shown) == 1
    assert state["status"] == "answered"
    assert state["decision"]["answer"] == "us-east-2"
    assert state["decision"]["decided_by"] == "U_APPROVER"


@pytest.mark.parametrize("mcp", ["http"], indirect=True)
async def test_over_http_the_question_goes_to_slack_even_for_a_form_client(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    form = Form("accept", {"answer": "eu-west-1"})
    async with mcp.session(token, elicitation=form) as session:
        answer = asyncio.create_task(call(session, "ask_human", question=QUESTION, wait_seconds=30))
        await answer_in_thread(h, QUESTION, "us-east-2")
        state = await asyncio.wait_for(answer, 10)
    assert form.shown == []  # stateless /mcp has no back-channel for elicitation/create
    assert state["decision"]["answer"] == "us-east-2"
    assert state["decision"]["decided_by"] == "U_APPROVER"
