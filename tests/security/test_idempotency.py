"""Finding 6: an idempotency key reused with a different body is a conflict (409; over MCP a
tool error), never the earlier request's decision."""

from __future__ import annotations

import asyncio

from tests.e2e.api_flows import create, http, make_key
from tests.e2e.harness import Harness
from tests.e2e.mcp_flows import Mcp, next_card


async def test_a_reused_key_with_another_body_is_409(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    first = await create(h, token, tool="read_logs", arguments={"svc": "api"}, idempotency_key="d1")
    assert first.status_code == 201, first.text
    await h.sandbox.click("U_APPROVER", "C_GENERAL", first.json()["message_ts"], "approve")
    async with http(h, token) as client:
        got = await client.get(f"/v1/requests/{first.json()['id']}?wait=5")
        assert got.json()["status"] == "approved"
    again = await create(h, token, tool="read_logs", arguments={"svc": "api"}, idempotency_key="d1")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other = await create(
        h, token, tool="drop_database", arguments={"db": "prod"}, idempotency_key="d1"
    )
    assert other.status_code == 409, other.text
    body = other.json()["error"]
    assert body["code"] == "conflict" and "idempotency_key" in body["message"]


async def test_a_reused_tool_use_id_is_a_tool_error(mcp: Mcp) -> None:
    h = mcp.h
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp.session(token) as session:
        first = asyncio.create_task(
            session.call_tool(
                "permission_prompt",
                {"tool_name": "Read", "input": {"path": "README"}, "tool_use_id": "toolu_9"},
            )
        )
        card = await next_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        assert not (await asyncio.wait_for(first, 30)).is_error
        reused = await session.call_tool(
            "permission_prompt",
            {"tool_name": "Bash", "input": {"command": "rm -rf /"}, "tool_use_id": "toolu_9"},
        )
    assert reused.is_error
    assert "conflict" in "".join(getattr(b, "text", "") for b in reused.content)
