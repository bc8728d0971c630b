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

from bot.testing import (
    FakeModelServer,
    check_chat_request,
    check_messages_request,
    sample_arguments,
)

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


ANTHROPIC_USER = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
TOOL_USE = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
NON_EMPTY = "all messages must have non-empty content except for the optional final assistant"


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([ANTHROPIC_USER], None),
        ([{"role": "user", "content": "hi"}], None),
        ([], "messages: at least one message is required"),
        (
            [{"role": "user", "content": [{"type": "text", "text": " \n"}]}],
            "messages: text content blocks must contain non-whitespace text",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": ""}]}],
            "messages: text content blocks must be non-empty",
        ),
        ([{"role": "user", "content": ""}], f"messages.0: {NON_EMPTY}"),
        ([ANTHROPIC_USER, {"role": "assistant", "content": []}, ANTHROPIC_USER], NON_EMPTY),
        ([ANTHROPIC_USER, {"role": "assistant", "content": []}], None),  # prefill
        (
            [ANTHROPIC_USER, {"role": "assistant", "content": "Sure: "}],
            "final assistant content cannot end with trailing whitespace",
        ),
        (
            [ANTHROPIC_USER, {"role": "assistant", "content": [TOOL_USE]}, ANTHROPIC_USER],
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: t1",
        ),
        (
            [
                ANTHROPIC_USER,
                {"role": "assistant", "content": [TOOL_USE]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
            ],
            None,
        ),
        (
            [
                ANTHROPIC_USER,
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz"}]},
            ],
            "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: zz",
        ),
        (
            [
                ANTHROPIC_USER,
                {"role": "assistant", "content": [TOOL_USE]},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "text", "text": "\n"}],
                        }
                    ],
                },
            ],
            "messages: text content blocks must contain non-whitespace text",
        ),
    ],
)
async def test_the_anthropic_api_refuses_what_the_real_one_refuses(
    server: FakeModelServer, messages: list, problem: str | None
) -> None:
    body = {"model": "claude-test", "max_tokens": 100, "messages": messages}
    found = check_messages_request(body)
    assert found is None if problem is None else problem in (found or "")
    server.reply(text="ok")
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/v1/messages", json=body)
    if problem is None:
        assert response.status_code == 200 and response.json()["content"][0]["text"] == "ok"
        return
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert problem in error["error"]["message"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"messages": []}, "Invalid 'messages': empty array."),
        (
            {"messages": [{"role": "user", "content": None}]},
            "Invalid value for 'content': expected a string, got null.",
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": None}, USER]},
            "Invalid value for 'content': expected a string, got null.",
        ),
        (
            {"messages": [USER, {"role": "assistant", "content": "x", "tool_calls": []}]},
            "Invalid 'messages[1].tool_calls': empty array.",
        ),
        ({"messages": [USER], "max_tokens": 0}, "Invalid 'max_tokens': integer below minimum"),
        (
            {"messages": [USER], "stream_options": {"include_usage": True}},
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        ),
    ],
)
async def test_the_openai_api_refuses_what_the_real_one_refuses(
    server: FakeModelServer, body: dict, problem: str
) -> None:
    response = await post(server, {"model": "gpt-test", **body})
    assert response.status_code == 400
    assert problem in response.json()["error"]["message"]


async def sse_lines(url: str, body: dict) -> list[str]:
    async with httpx.AsyncClient() as client:
        async with client.stream("POST", url, json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            return [line async for line in response.aiter_lines() if line]


async def test_openai_streams_chunks_with_arguments_split_across_deltas(
    server: FakeModelServer,
) -> None:
    server.reply(text="Checking.", tool_calls=[("deploy", {"environment": "staging"}, "c1")])
    body = {
        "model": "gpt-test",
        "messages": [USER],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    lines = await sse_lines(f"{server.base_url}/chat/completions", body)
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    text = "".join(d.get("content") or "" for d in deltas)
    arguments = [
        d["tool_calls"][0]["function"].get("arguments")
        for d in deltas
        if d.get("tool_calls") and "arguments" in d["tool_calls"][0]["function"]
    ]
    assert text == "Checking." and len(arguments) > 3
    assert json.loads("".join(arguments)) == {"environment": "staging"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


async def test_anthropic_streams_content_block_events(server: FakeModelServer) -> None:
    server.reply(
        text="\n\n", tool_calls=[("deploy", '{"environment": "stag', "t1")], truncated=True
    )
    body = {"model": "claude-test", "max_tokens": 50, "messages": [ANTHROPIC_USER], "stream": True}
    lines = await sse_lines(f"{server.url}/v1/messages", body)
    names = [line[7:] for line in lines if line.startswith("event: ")]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-2:] == ["message_delta", "message_stop"]
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    partial = "".join(
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    assert partial == '{"environment": "stag'  # cut off, as a stream at max_tokens would be
    stop = next(e for e in events if e["type"] == "message_delta")
    assert stop["delta"]["stop_reason"] == "max_tokens" and stop["usage"]["output_tokens"] == 50


async def test_a_cut_off_tool_input_reads_as_its_closed_prefix(server: FakeModelServer) -> None:
    """What makes a cut-off call dangerous: its partial input often validates."""
    server.reply(
        tool_calls=[("deploy", '{"environment": "staging", "version": "v', "t1")], truncated=True
    )
    body = {"model": "claude-test", "max_tokens": 50, "messages": [ANTHROPIC_USER]}
    async with httpx.AsyncClient() as client:
        data = (await client.post(f"{server.url}/v1/messages", json=body)).json()
    assert data["stop_reason"] == "max_tokens"
    assert data["content"][0]["input"] == {"environment": "staging", "version": "v"}
