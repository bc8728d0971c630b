"""Shared HTTP handling for providers: classify failures as retryable or not."""

from __future__ import annotations

import httpx

from bot.agent.errors import ModelError


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: dict,
    headers: dict[str, str],
    timeout: float,  # noqa: ASYNC109 - the per-request HTTP timeout handed to httpx
) -> dict:
    try:
        response = await client.post(url, json=payload, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise ModelError(
            f"Model request to {url} timed out after {timeout}s", retryable=True
        ) from None
    except httpx.TransportError as exc:
        raise ModelError(f"Model request to {url} failed: {exc}", retryable=True) from None
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
    try:
        return response.json()
    except ValueError:
        raise ModelError("Model provider answered with invalid JSON", retryable=True) from None
