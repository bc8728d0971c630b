"""Shared HTTP handling for providers: JSON requests, SSE streams, retryable failures.

On aiohttp (a dependency of the bot already): a model call through httpx took about twice the
CPU of the same call through aiohttp with httpx's transport, and six times the CPU of aiohttp
alone (docs/benchmarks.md, "seventh stop"). An aiohttp session belongs to the event loop it
was made on, so a model keeps one per loop (`Sessions`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from yarl import URL

from bot.agent.errors import ModelError

JsonObject = dict[str, Any]


class Sessions:
    """One aiohttp session per event loop (the front's and the embedded worker's loops each
    call models), made at the loop's first call and closed when the loop shuts down: an async
    generator of the loop's own holds it, and `asyncio.run` (or `asyncio.Runner`, as
    bot/event_loop.py runs every loop) closes a loop's async generators while it still runs.
    The session of a loop closed without that is let go of at the next loop's first call."""

    def __init__(self) -> None:
        self._by_loop: dict[asyncio.AbstractEventLoop, _LoopSession] = {}

    async def get(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        held = self._by_loop.get(loop)
        if held is None or held.session.closed:
            self._let_go_of_closed_loops()
            # trust_env: HTTPS_PROXY, NO_PROXY and .netrc apply, as they did with httpx
            held = self._by_loop[loop] = _LoopSession(aiohttp.ClientSession(trust_env=True))
            await held.closer.__anext__()  # now the loop knows it, and closes it at shutdown
        return held.session

    def _let_go_of_closed_loops(self) -> None:
        for loop in [lp for lp in self._by_loop if lp.is_closed()]:
            session = self._by_loop.pop(loop).session
            connector = session.connector
            session.detach()  # closed, without awaiting on a loop that is gone
            if connector is not None:
                with contextlib.suppress(Exception):  # its sockets went with the loop
                    connector.close()

    async def aclose(self) -> None:
        """Close this loop's session (and let go of those of closed loops)."""
        self._let_go_of_closed_loops()
        held = self._by_loop.pop(asyncio.get_running_loop(), None)
        if held is not None:
            await held.session.close()


class _LoopSession:
    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self.closer = _closed_at_shutdown(session)  # held here: the loop keeps a weak reference


async def _closed_at_shutdown(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await session.close()


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


async def _raise_for_status(response: aiohttp.ClientResponse) -> None:
    status = response.status
    if status < 400:
        return
    text = (await response.read()).decode("utf-8", errors="replace")
    if status == 429 or status >= 500:
        raise ModelError(
            f"Model provider answered HTTP {status}: {text[:300]}",
            retryable=True,
            retry_after=_retry_after(response),
        )
    raise ModelError(f"Model provider answered HTTP {status}: {text[:500]}")


def _transport_error(url: str, exc: BaseException, timeout: float) -> ModelError:
    if isinstance(exc, TimeoutError):
        return ModelError(f"Model request to {url} timed out after {timeout}s", retryable=True)
    return ModelError(f"Model request to {url} failed: {exc}", retryable=True)


def _target(url: str, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A base URL with credentials in it (`https://user:pass@gateway/v1`) sends them as basic
    auth, in place of the provider's own Authorization header, as httpx did (aiohttp refuses
    a URL with credentials beside an Authorization header)."""
    parsed = URL(url)
    if parsed.user is None and parsed.password is None:
        return url, headers
    pair = f"{parsed.user or ''}:{parsed.password or ''}".encode()
    kept = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    kept["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    return str(parsed.with_user(None)), kept


def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    """Each phase (connecting, each read) within `seconds`, as httpx's timeout was; the whole
    call's deadline is the agent loop's (bot/agent/loop.py)."""
    return aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    payload: JsonObject,
    headers: dict[str, str],
    timeout: float,  # noqa: ASYNC109 - the per-read HTTP timeout handed to aiohttp
) -> JsonObject:
    target, headers = _target(url, headers)
    try:
        async with session.post(
            target, json=payload, headers=headers, timeout=_timeout(timeout)
        ) as response:
            await _raise_for_status(response)
            body = await response.read()
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise _transport_error(url, exc, timeout) from None
    try:
        data = json.loads(body)
    except ValueError:
        raise ModelError("Model provider answered with invalid JSON", retryable=True) from None
    if not isinstance(data, dict):
        raise ModelError(f"Model provider answered with {type(data).__name__}, not an object")
    return data


async def lines_of(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """Text lines of a byte stream (`\\n`, `\\r\\n` or `\\r` ends a line), of any length."""
    pending = b""
    async for chunk in chunks:
        held_cr = (pending + chunk).endswith(b"\r")  # its \n may come with the next chunk
        text = (pending + chunk)[: -1 if held_cr else None]
        *whole, pending = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        pending += b"\r" if held_cr else b""
        for line in whole:
            yield line.decode("utf-8", errors="replace")
    if pending.rstrip(b"\r"):
        yield pending.rstrip(b"\r").decode("utf-8", errors="replace")


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined; comments skipped)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


async def post_sse(
    session: aiohttp.ClientSession,
    url: str,
    payload: JsonObject,
    headers: dict[str, str],
    timeout: float,  # noqa: ASYNC109 - the per-read HTTP timeout handed to aiohttp
) -> AsyncIterator[JsonObject]:
    """POST, then yield each JSON event of the server-sent event stream (until `[DONE]`)."""
    target, headers = _target(url, headers)
    try:
        async with session.post(
            target, json=payload, headers=headers, timeout=_timeout(timeout)
        ) as response:
            await _raise_for_status(response)
            kind = response.headers.get("content-type", "")
            if not kind.startswith("text/event-stream"):
                raise ModelError(
                    f"Model provider at {url} answered a streamed request with {kind or 'no'} "
                    "content instead of server-sent events: it does not stream"
                )
            async for data in sse_data(lines_of(response.content.iter_any())):
                if data.strip() == "[DONE]":
                    return
                yield _event(data)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise _transport_error(url, exc, timeout) from None


def _event(data: str) -> JsonObject:
    try:
        event = json.loads(data)
    except ValueError:
        raise ModelError(
            f"Model provider streamed invalid JSON: {data[:200]}", retryable=True
        ) from None
    if not isinstance(event, dict):
        raise ModelError(f"Model provider streamed {type(event).__name__}, not an object")
    return event
