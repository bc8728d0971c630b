"""`bot.testing.FakeModelServer` itself: shapes, queue, failures, strictness, script mode."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import httpx
import pytest

from bot.testing import FakeModelServer, check_chat_request, sample_arguments

REPO = Path(__file__).resolve().parents[2]
USER = {"role": "user", "content": "hi"}


async def post(server: FakeModelServer, body: dict, wait: float = 5) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{server.base_url}/chat/completions", json=body, timeout=wait)


async def test_reply_shapes_and_recording(server: FakeModelServer) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1" and server.port > 0
    ids = server.reply(
        tool_calls=[("deploy", {"environment": "staging"}), ("deploy", {"x": 1}, "mine")]
    )
    assert ids == ["call_1", "mine"]
    server.reply(text="hello", usage={"prompt_tokens": 3, "completion_tokens": 2})
    assert server.pending == 2

    body = {"model": "gpt-4o-mini", "messages": [USER]}
    data = (await post(server, body)).json()
    msg = data["choices"][0]["message"]
    assert data["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "deploy", "arguments": '{"environment": "staging"}'},
    }
    assert set(data["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}

    data = (await post(server, body)).json()
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert data["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert data["model"] == "gpt-4o-mini"
    assert server.requests == [body, body] and server.last_request == body

    # nothing queued, no responder: a clear, non-retryable error
    response = await post(server, body)
    assert response.status_code == 400 and "no reply queued" in response.text


async def test_fail_and_hang(server: FakeModelServer) -> None:
    server.fail(status=429, retry_after=0.01)
    server.fail(status=500)
    server.hang(10)
    body = {"model": "m", "messages": [USER]}
    r = await post(server, body)
    assert r.status_code == 429 and r.headers["Retry-After"] == "0.01"
    assert (await post(server, body)).status_code == 500
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        await post(server, body, wait=0.1)
    assert time.monotonic() - started < 1


async def test_responder_function(server: FakeModelServer) -> None:
    seen: list[dict] = []

    async def responder(body: dict) -> dict:
        seen.append(body)
        return {"choices": [{"message": {"role": "assistant", "content": "custom"}}]}

    server.responder = responder
    server.reply(text="queued first")
    body = {"model": "m", "messages": [USER]}
    assert (await post(server, body)).json()["choices"][0]["message"]["content"] == "queued first"
    assert (await post(server, body)).json()["choices"][0]["message"]["content"] == "custom"
    assert seen == [body]


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([USER], None),
        (
            [
                USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        },
                        {
                            "id": "b",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                USER,
            ],
            "did not have response messages: b",
        ),
        (
            [
                USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        },
                    ],
                },
            ],
            "did not have response messages: a",
        ),
        ([USER, {"role": "tool", "tool_call_id": "zz", "content": "1"}], "must be a response"),
        (
            [
                USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}},
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "1"},
            ],
            "JSON string",
        ),
    ],
)
async def test_dangling_tool_calls_are_rejected_like_real_providers(
    server: FakeModelServer, messages: list, problem: str | None
) -> None:
    body = {"model": "m", "messages": messages}
    assert (check_chat_request(body) is None) == (problem is None)
    if problem is None:
        return
    response = await post(server, body)
    assert response.status_code == 400
    assert problem in response.json()["error"]["message"]
    assert server.violations and problem in server.violations[0]


def test_sample_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "environment": {"enum": ["staging", "production"], "type": "string"},
            "version": {"type": "string"},
            "replicas": {"type": "integer", "default": 3},
            "dry_run": {"type": "boolean"},
        },
        "required": ["environment", "version", "dry_run"],
    }
    assert sample_arguments(schema) == {
        "environment": "staging",
        "version": "test",
        "dry_run": True,
    }


async def test_script_mode_in_another_process() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.testing.fake_model",
        "--port",
        "0",
        "--script",
        "tool-then-text",
        env=env,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode()
        assert line.startswith("FakeModelServer listening on http://127.0.0.1:")
        base_url = line.rsplit(" ", 1)[1].strip()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "deploy",
                    "description": "Deploy",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "environment": {"type": "string", "enum": ["staging", "prod"]}
                        },
                        "required": ["environment"],
                    },
                },
            }
        ]
        async with httpx.AsyncClient() as client:
            first = await client.post(
                f"{base_url}/chat/completions",
                json={"model": "m", "messages": [USER], "tools": tools},
            )
            call = first.json()["choices"][0]["message"]["tool_calls"][0]
            assert call["function"]["name"] == "deploy"
            assert json.loads(call["function"]["arguments"]) == {"environment": "staging"}
            assistant = first.json()["choices"][0]["message"]
            second = await client.post(
                f"{base_url}/chat/completions",
                json={
                    "model": "m",
                    "tools": tools,
                    "messages": [
                        USER,
                        assistant,
                        {"role": "tool", "tool_call_id": call["id"], "content": "ok"},
                    ],
                },
            )
            assert second.json()["choices"][0]["message"]["content"] == "Done. Tool result: ok"
    finally:
        proc.terminate()
        await proc.wait()
