"""`sayso mcp`: the MCP server over stdio as a subprocess, driven by the `mcp` SDK's stdio
client. It posts the cards itself with `sayso run`'s settings; the running bot handles the
clicks, and the stdio server learns the decisions from the database."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.e2e.api_flows import make_key
from tests.e2e.harness import TOKEN, Harness
from tests.e2e.mcp_flows import call, next_card

pytestmark = pytest.mark.slow


def _server(h: Harness, cwd: Path, key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "bot.cli", "mcp"],
        cwd=cwd,
        env={
            "PYTHONPATH": os.environ.get("PYTHONPATH", os.getcwd()),
            "DATABASE_URL": h.db_url,
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_API_URL": h.sandbox.api_url,
            "SAYSO_KEY": key,
        },
    )


@asynccontextmanager
async def mcp_stdio(
    h: Harness, cwd: Path, key: str, errlog_path: Path
) -> AsyncIterator[ClientSession]:
    with errlog_path.open("w") as errlog:
        async with (
            stdio_client(_server(h, cwd, key), errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=60) as session,
        ):
            await session.initialize()
            yield session


async def test_request_approval_over_stdio(harness: Harness, tmp_path: Path) -> None:
    h = harness
    token, _ = await make_key(h, channels=["C_GENERAL"])
    async with mcp_stdio(h, tmp_path, token, tmp_path / "stderr.log") as session:
        first = await call(
            session,
            "request_approval",
            tool_name="deploy",
            arguments={"env": "prod"},
            wait_seconds=0,
        )
        assert first == {"status": "pending", "id": first["id"]}
        card = await next_card(h)  # posted by the stdio process, with the bot's token
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        state = await call(session, "get_decision", id=first["id"], wait_seconds=20)
    assert state["status"] == "approved"
    assert state["decision"]["arguments"] == {"env": "prod"}
    assert state["decision"]["decided_by"] == "U_APPROVER"


async def test_a_bad_key_stops_the_stdio_server(harness: Harness, tmp_path: Path) -> None:
    h = harness
    errlog = tmp_path / "stderr.log"
    with pytest.raises(Exception):  # noqa: B017 - the client sees its server go away
        async with mcp_stdio(h, tmp_path, "sk_sayso_not-a-key", errlog):
            pass
    await asyncio.sleep(0)
    assert "SAYSO_KEY" in errlog.read_text()
    assert h.sandbox.messages("C_GENERAL") == []
