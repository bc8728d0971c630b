"""The providers' HTTP layer (bot/agent/models/http.py) on aiohttp, over real sockets: server-sent
events however the bytes are cut, a stalled provider, and one session per event loop."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from bot.agent.errors import ModelError
from bot.agent.messages import Message
from bot.agent.models import OpenAIChatModel
from bot.agent.models.base import ModelSettings
from bot.agent.models.http import lines_of, post_sse
from bot.testing import FakeModelServer

SETTINGS = ModelSettings(timeout=5.0)


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _lines(*parts: bytes) -> list[str]:
    return [line async for line in lines_of(_chunks(*parts))]


async def test_lines_end_at_any_line_break_wherever_the_chunks_are_cut() -> None:
    assert await _lines(b"a\r", b"\nb\rc\n\nd") == ["a", "b", "c", "", "d"]
    assert await _lines(b"a\r", b"\r\n") == ["a", ""]  # two breaks, not one
    assert await _lines(b"", b"a\n", b"") == ["a"]
    long = b"x" * 300_000  # far past aiohttp's own line limit (64 KiB)
    assert await _lines(long[:1000], long[1000:] + b"\n") == [long.decode()]


@pytest.fixture
async def sse_server() -> AsyncIterator[tuple[str, list[str]]]:
    """Answers every POST with two events, CRLF line breaks, sent a few bytes at a time; a
    POST to /stall waits 2 s."""
    seen: list[str] = []

    async def events(request: web.Request) -> web.StreamResponse:
        model = (await request.json())["model"]
        seen.append(f"{model} {request.headers.get('Authorization', '-')}")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        body = b"".join(
            b": a comment\r\ndata: " + json.dumps({"n": n}).encode() + b"\r\n\r\n" for n in (1, 2)
        )
        for i in range(0, len(body), 3):
            await response.write(body[i : i + 3])
        await response.write(b"data: [DONE]\r\n\r\n")
        return response

    async def stall(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(2)
        return web.Response()

    app = web.Application()
    app.router.add_post("/events", events)
    app.router.add_post("/stall", stall)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_events_cut_into_pieces_arrive_whole(sse_server: tuple[str, list[str]]) -> None:
    url, seen = sse_server
    async with aiohttp.ClientSession() as session:
        got = [e async for e in post_sse(session, f"{url}/events", {"model": "m"}, {}, 5.0)]
    assert got == [{"n": 1}, {"n": 2}] and seen == ["m -"]


async def test_a_stalled_provider_is_a_retryable_timeout(sse_server: tuple[str, list[str]]) -> None:
    url, _ = sse_server
    async with aiohttp.ClientSession() as session:
        with pytest.raises(ModelError) as raised:
            async for _ in post_sse(session, f"{url}/stall", {"model": "m"}, {}, 0.3):
                pass
    assert raised.value.retryable and "timed out after 0.3s" in str(raised.value)


async def test_a_refused_connection_is_a_retryable_error() -> None:
    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ModelError) as raised:
        await model.request([Message(role="user", content="hi")], [], SETTINGS)
    assert raised.value.retryable and "failed" in str(raised.value)
    await model.aclose()


async def test_one_model_answers_on_every_event_loop_that_calls_it(
    server: FakeModelServer,
) -> None:
    """The front's loop and the embedded worker's loop share the agents, so one model is
    called from both (an aiohttp session belongs to one loop); a loop that closed and a new
    one after it work too."""
    model = OpenAIChatModel("m", base_url=server.base_url, api_key="k")
    asked = [Message(role="user", content="hi")]
    for n in range(4):
        server.reply(text=f"answer {n}")

    async def ask() -> str:
        return (await model.request(asked, [], SETTINGS)).message.content or ""

    here = await ask()
    elsewhere = await asyncio.gather(
        asyncio.to_thread(asyncio.run, ask()), asyncio.to_thread(asyncio.run, ask())
    )
    after_they_closed = await asyncio.to_thread(asyncio.run, ask())
    assert sorted([here, *elsewhere, after_they_closed]) == [f"answer {n}" for n in range(4)]
    await model.aclose()


async def test_credentials_in_a_base_url_are_sent_as_basic_auth(
    sse_server: tuple[str, list[str]],
) -> None:
    """`http://user:pass@gateway/v1` (a gateway's basic auth): sent as basic auth in place of
    the provider's own Authorization header, as httpx did (aiohttp refuses both at once)."""
    url, seen = sse_server
    gateway = url.replace("http://", "http://gw:s3cret@")
    headers = {"Authorization": "Bearer k"}
    async with aiohttp.ClientSession() as session:
        events = post_sse(session, f"{gateway}/events", {"model": "m"}, headers, 5.0)
        assert [e async for e in events] == [{"n": 1}, {"n": 2}]
    assert seen == ["m Basic " + base64.b64encode(b"gw:s3cret").decode()]
