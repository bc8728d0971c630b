"""What the MCP tests share: the `mcp` fixture (sayso's MCP server over each transport, reached
with the `mcp` SDK's own client), tool answers, and the cards they post.

`mcp` is parametrized over the two transports, so one test is one flow over both:
- "http": /mcp on the running bot (streamable HTTP, stateless), on a SQLite file;
- "stdio": `sayso mcp` as a subprocess next to the running bot, as deployed: it posts the cards
  with the bot's settings, the bot handles the clicks, and the stdio server learns the decisions
  from the shared database. On PostgreSQL when SAYSO_TEST_POSTGRES_URL is set (a decision wakes
  it at once through LISTEN/NOTIFY), else on the same SQLite file (it re-reads every 5 s).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx2
import mcp.types as mcp_types
import pytest
from mcp.client.session import ClientSession, ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bot.sandbox import SlackSandbox
from tests.e2e.harness import Harness, has_button, running_harness
from tests.helpers.postgres import PG_URL, fresh_postgres
from tests.helpers.waiting import eventually

Transport = Literal["http", "stdio"]

CLIENT = mcp_types.Implementation(name="sayso-e2e-client", version="1.0")
"""How the tests' MCP client introduces itself."""


class Mcp:
    """sayso's MCP server over one transport, next to a running bot (`h`)."""

    def __init__(self, h: Harness, transport: Transport) -> None:
        self.h = h
        self.transport = transport
        self.errlog = h.tmp_path / "mcp-stderr.log"

    def session(
        self, token: str | None, *, elicitation: ElicitationFnT | None = None
    ) -> AbstractAsyncContextManager[ClientSession]:
        """An initialized session of the SDK's client, authenticated with `token`; with an
        `elicitation` callback, the client declares elicitation."""
        if self.transport == "http":
            return mcp_http(self.h, token, elicitation=elicitation)
        return mcp_stdio(self.h, token or "", self.errlog, elicitation=elicitation)


@asynccontextmanager
async def mcp_http(
    h: Harness, token: str | None, *, elicitation: ElicitationFnT | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the bot's /mcp, authenticated with `token`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http,
        streamable_http_client(f"{h.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation, client_info=CLIENT) as session,
    ):
        await session.initialize()
        yield session


STDIO_ENV = ("PYTHONPATH", "SAYSO_URL", "SAYSO_KEY")
"""Everything `sayso mcp` gets: a running sayso's URL and an API key; no database URL and no
Slack token, which the agent it gates could read (security round two, finding 4)."""


def stdio_server(h: Harness, key: str) -> StdioServerParameters:
    """`sayso mcp` against the running bot's /v1, with SAYSO_URL and SAYSO_KEY only."""
    env = {
        "PYTHONPATH": os.environ.get("PYTHONPATH", os.getcwd()),
        "SAYSO_URL": h.url,
        "SAYSO_KEY": key,
    }
    assert set(env) == set(STDIO_ENV)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "bot.cli", "mcp"], cwd=h.tmp_path, env=env
    )


@asynccontextmanager
async def mcp_stdio(
    h: Harness, key: str, errlog_path: Path, *, elicitation: ElicitationFnT | None = None
) -> AsyncIterator[ClientSession]:
    """`sayso mcp` started with SAYSO_KEY=`key`, and an initialized session with it; its
    stderr in `errlog_path`."""
    with errlog_path.open("a") as errlog:
        async with (
            stdio_client(stdio_server(h, key), errlog=errlog) as (read, write),
            ClientSession(
                read,
                write,
                read_timeout_seconds=60,
                elicitation_callback=elicitation,
                client_info=CLIENT,
            ) as session,
        ):
            await session.initialize()
            yield session


@pytest.fixture(params=["http", pytest.param("stdio", marks=pytest.mark.slow)])
async def mcp(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Mcp]:
    """The running bot and its MCP server over HTTP, then over stdio."""
    transport: Transport = request.param
    async with AsyncExitStack() as stack:
        db_url = None
        if transport == "stdio" and PG_URL:
            db_url = await stack.enter_async_context(fresh_postgres(PG_URL))
        h = await stack.enter_async_context(running_harness(tmp_path, db_url))
        yield Mcp(h, transport)


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A tool's answer: its structured content, else its text parsed as JSON."""
    result = await session.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    if isinstance(result.structured_content, dict) and tool != "permission_prompt":
        structured = result.structured_content
        return structured.get("result", structured) if set(structured) == {"result"} else structured
    return json.loads(text)


def open_cards(sandbox: SlackSandbox, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
    """The channel's cards still waiting for a decision (they have an Approve button)."""
    return [m for m in sandbox.messages(channel) if has_button(m, "approve")]


async def next_card(h: Harness, channel: str = "C_GENERAL") -> dict[str, Any]:
    cards = await h.sandbox.wait_for(lambda sb: open_cards(sb, channel))
    assert len(cards) == 1, cards
    card: dict[str, Any] = cards[0]
    return card


async def answer_in_thread(
    h: Harness, question: str, answer: str, user: str = "U_APPROVER"
) -> None:
    """Reply `answer` in the thread of the question's card, once the bot knows the thread."""
    cards = await h.sandbox.wait_for(
        lambda sb: [m for m in sb.messages("C_GENERAL") if question in str(m)] or None
    )
    assert h.bot is not None
    store = h.bot.store  # the card's thread is the question's once recorded
    await eventually(lambda: store.runs.for_thread("C_GENERAL", cards[0]["ts"]))
    await h.sandbox.post_message(user, answer, thread_ts=cards[0]["ts"])
