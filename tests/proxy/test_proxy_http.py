"""`sayso proxy --http PORT` (streamable HTTP served) and `sayso proxy --upstream URL`
(streamable HTTP upstream, headers passed on), chained in front of the reference
`mcp-server-time`, driven by the `mcp` SDK's client; a gated call through both asks once."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bot.serve import free_port
from tests.proxy.conftest import Live
from tests.proxy.flows import CLIENT, one_card, proxy_env, text_of

pytestmark = pytest.mark.slow


@asynccontextmanager
async def http_proxy(live: Live, tmp_path: Path, policy: Path) -> AsyncIterator[str]:
    """`sayso proxy --name time --http PORT -- python -m mcp_server_time`: its /mcp URL."""
    port = free_port()
    env = proxy_env(live.h, live.key, SAYSO_POLICY=str(policy))
    with (tmp_path / "http-proxy.log").open("a") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *["-m", "bot.cli", "proxy", "--name", "time", "--http", str(port), "--"],
            *[sys.executable, "-m", "mcp_server_time"],
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=log,
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            for _ in range(200):
                try:
                    async with httpx2.AsyncClient() as c:
                        await c.get(url)
                    break
                except httpx2.HTTPError:
                    await asyncio.sleep(0.05)
            yield url
        finally:
            process.terminate()
            await process.wait()


async def test_http_served_and_http_upstream(live: Live, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"  # convert_time is read-only: the policy gates it
    policy.write_text("proxy:\n  time:\n    tools:\n      convert_time: {action: approve}\n")
    async with http_proxy(live, tmp_path, policy) as url:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, client_info=CLIENT) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert names == {"get_current_time", "convert_time"}
            now = await session.call_tool("get_current_time", {"timezone": "Etc/UTC"})
            assert not now.is_error and "Etc/UTC" in text_of(now)
        # a second proxy, stdio, whose upstream is the first over streamable HTTP
        command = ["-m", "bot.cli", "proxy", "--name", "chained", "--upstream", url]
        command += ["--header", "X-Team: platform"]
        params = StdioServerParameters(
            command=sys.executable, args=command, env=proxy_env(live.h, live.key), cwd=tmp_path
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, read_timeout_seconds=60, client_info=CLIENT) as session,
        ):
            await session.initialize()
            arguments = {"source_timezone": "Etc/UTC", "time": "12:00"}
            arguments["target_timezone"] = "Asia/Tokyo"
            call = asyncio.create_task(session.call_tool("convert_time", arguments))
            card = await one_card(live.h)  # asked by the first proxy (its policy)
            await live.h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
            result = await asyncio.wait_for(call, 30)
    assert not result.is_error, text_of(result)
    assert "Asia/Tokyo" in text_of(result)
