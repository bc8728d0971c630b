"""The MCP server over both transports (streamable HTTP at /mcp on the bot's port, and stdio,
`sayso mcp`: the `mcp` fixture), driven by the `mcp` SDK's own client: approvals decided by
clicks in the sandbox (approved, edited, rejected, expired), polling, Claude Code's permission
prompt (allow with edited input, deny with a message), a question answered in Slack, and a bad
key refused over HTTP (over stdio: test_mcp_stdio.py)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from mcp import MCPError

from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, has_button
from tests.e2e.mcp_flows import Mcp, answer_in_thread, call, mcp_http, next_card, open_cards
from tests.helpers.views import filled_views


async def test_request_approval_is_approved_by_a_click(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        assert {"request_approval", "get_decision", "ask_human", "permission_prompt"} <= tools
        answer = asyncio.create_task(
            call(
                session,
                "request_approval",
                tool_name="deploy",
                arguments={"env": "prod"},
                title="Deploy v2 to production",
                wait_seconds=30,
            )
        )
        card = await next_card(h)
        assert "Deploy v2 to production" in json.dumps(card)
        assert not answer.done()
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        state = await asyncio.wait_for(answer, 10)
    assert state["status"] == "approved" and state["kind"] == "approval"
    assert state["decision"]["type"] == "approve"
    assert state["decision"]["decided_by"] == "U_APPROVER"
    assert state["decision"]["arguments"] == {"env": "prod"}


SCHEMA = {
    "type": "object",
    "properties": {"env": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}},
    "required": ["env"],
}


async def test_request_approval_edited_against_its_schema(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        refused = await session.call_tool(
            "request_approval",
            {"tool_name": "deploy", "arguments": {"replicas": 2}, "schema": SCHEMA},
        )
        assert refused.is_error and "arguments.env" in refused.content[0].text  # type: ignore[union-attr]
        answer = asyncio.create_task(
            call(
                session,
                "request_approval",
                tool_name="deploy",
                arguments={"env": "prod"},
                schema=SCHEMA,
                wait_seconds=30,
            )
        )
        card = await next_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], {"env": "staging", "replicas": "3"})
        state = await asyncio.wait_for(answer, 10)
    assert state["status"] == "approved" and state["decision"]["type"] == "edit"
    assert state["decision"]["arguments"] == {"env": "staging", "replicas": 3}


async def test_an_expired_request_is_reported_and_denied(mcp: Mcp) -> None:
    h = mcp.h
    await h.stop_bot()
    h.settings_overrides = {"sayso_approval_ttl": "1s"}
    await h.start_bot()
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        state = await call(
            session, "request_approval", tool_name="deploy", arguments={}, wait_seconds=10
        )
        assert state["status"] == "expired" and state["decision"] is None
        answer = await call(
            session,
            "permission_prompt",
            tool_name="Bash",
            input={"command": "make deploy"},
            tool_use_id="toolu_03",
        )
    assert answer == {"behavior": "deny", "message": "No decision: the request is expired."}


async def test_get_decision_polls_until_decided(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        first = await call(
            session, "request_approval", tool_name="deploy", arguments={}, wait_seconds=0
        )
        assert first == {"status": "pending", "id": first["id"]}
        again = await call(session, "get_decision", id=first["id"], wait_seconds=0.2)
        assert again == {"status": "pending", "id": first["id"]}
        card = await next_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Not on a Friday"})
        state = await call(session, "get_decision", id=first["id"], wait_seconds=10)
        assert state["status"] == "rejected" and state["id"] == first["id"]
        assert state["decision"]["reason"] == "Not on a Friday"
        other = await make_key(h, name="other")
    async with mcp.session(other[0]) as session:  # another key's request does not exist
        result = await session.call_tool("get_decision", {"id": first["id"], "wait_seconds": 0})
        assert result.is_error and "not_found" in result.content[0].text  # type: ignore[union-attr]


async def test_permission_prompt_allows_with_the_edited_input(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])  # no channel given: the key's first
    prompt = {
        "tool_name": "Bash",
        "input": {"command": "rm -rf build", "description": "Clean the build"},
        "tool_use_id": "toolu_01",
    }
    async with mcp.session(token) as session:
        answer = asyncio.create_task(call(session, "permission_prompt", **prompt))
        card = await next_card(h)
        assert "rm -rf build" in json.dumps(card) and has_button(card, "edit")
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view(
            "U_APPROVER",
            view["id"],
            {"command": "rm -rf build/tmp", "description": "Clean the build"},
        )
        assert await asyncio.wait_for(answer, 10) == {
            "behavior": "allow",
            "updatedInput": {"command": "rm -rf build/tmp", "description": "Clean the build"},
        }
        # the tool_use_id is the idempotency key: asked again, the same answer, no new card
        assert await call(session, "permission_prompt", **prompt) == {
            "behavior": "allow",
            "updatedInput": {"command": "rm -rf build/tmp", "description": "Clean the build"},
        }
    await h.idle()  # the card's update goes through the outbox
    assert open_cards(h.sandbox) == []
    assert len([m for m in h.sandbox.messages("C_GENERAL") if "rm -rf" in json.dumps(m)]) == 1


async def test_permission_prompt_denies_with_a_message(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        answer = asyncio.create_task(
            call(
                session,
                "permission_prompt",
                tool_name="Write",
                input={"file_path": "/etc/hosts", "content": "0.0.0.0 example.com"},
                tool_use_id="toolu_02",
            )
        )
        card = await next_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Leave /etc alone"})
        assert await asyncio.wait_for(answer, 10) == {
            "behavior": "deny",
            "message": "Leave /etc alone",
        }


async def test_ask_human_is_answered_in_the_cards_thread(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        answer = asyncio.create_task(
            call(session, "ask_human", question="Which region?", wait_seconds=30)
        )
        await answer_in_thread(h, "Which region?", "us-east-2")
        state = await asyncio.wait_for(answer, 10)
    assert state["status"] == "answered" and state["kind"] == "question"
    assert state["decision"]["answer"] == "us-east-2"
    assert state["decision"]["decided_by"] == "U_APPROVER"


@pytest.mark.parametrize("token", [None, "sk_sayso_not-a-key"])
async def test_a_bad_key_is_refused(harness: Harness, token: str | None) -> None:
    h = harness
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    async with httpx.AsyncClient(base_url=h.url, headers=headers) as client:
        r = await client.post(
            "/mcp",
            json=initialize,
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    with pytest.raises(ExceptionGroup) as failed:  # the SDK's own client is refused too
        async with mcp_http(h, token):
            pass
    assert failed.group_contains(MCPError, depth=None)
    assert h.sandbox.messages("C_GENERAL") == []
