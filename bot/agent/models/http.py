"""Shared HTTP handling for providers: JSON requests, SSE streams, retryable failures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bot.agent.errors import ModelError

JsonObject = dict[str, Any]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code == 429 or response.status_code >= 500:
        raise ModelError(
            f"Model provider answered HTTP {response.status_code}: {response.text[:300]}",
            retryable=True,
            retry_after=_retry_after(response),
        )
    if response.status_code >= 400:
        raise ModelError(
            f"Model provider answered HTTP {response.status_code}: {response.text[:500]}"
        )


def _transport_error(url: str, exc: httpx.HTTPError, timeout: float) -> ModelError:
    if isinstance(exc, httpx.TimeoutException):
        return ModelError(f"Model request to {url} timed out after {timeout}s", retryable=True)
    return ModelError(f"Model request to {url} failed: {exc}", retryable=True)


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: JsonObject,
    headers: dict[str, str],
    timeout: float,  # noqa: ASYNC109 - the per-request HTTP timeout handed to httpx
) -> JsonObject:
    try:
        response = await client.post(url, json=payload, headers=headers, timeout=timeout)
    except httpx.TransportError as exc:
        raise _transport_error(url, exc, timeout) from None
    _raise_for_status(response)
    try:
        data = response.json()
    except ValueError:
        raise ModelError("Model provider answered with invalid JSON", retryable=True) from None
    if not isinstance(data, dict):
        raise ModelError(f"Model provider answered with {type(data).__name__}, not an object")
    return data


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
    client: httpx.AsyncClient,
    url: str,
    payload: JsonObject,
    headers: dict[str, str],
    timeout: float,  # noqa: ASYNC109 - the per-read HTTP timeout handed to httpx
) -> AsyncIterator[JsonObject]:
    """POST, then yield each JSON event of the server-sent event stream (until `[DONE]`)."""
    try:
        async with client.stream(
            "POST", url, json=payload, headers=headers, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                _raise_for_status(response)
            kind = response.headers.get("content-type", "")
            if not kind.startswith("text/event-stream"):
                raise ModelError(
                    f"Model provider at {url} answered a streamed request with {kind or 'no'} "
                    "content instead of server-sent events: it does not stream"
                )
            async for data in sse_data(response.aiter_lines()):
                if data.strip() == "[DONE]":
                    return
                yield _event(data)
    except httpx.TransportError as exc:
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
