"""Finding 1: a caller's JSON Schema never reaches the network and cannot freeze the bot."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

from tests.e2e.api_flows import create, http, make_key
from tests.e2e.harness import Harness


def _error(response: Any) -> str:
    assert response.status_code == 422, response.text
    return str(response.json()["error"]["message"])


class _Listener:
    """A TCP listener on its own thread (the bot's loop may be the one a fetch would block):
    it records every connection and answers none."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.hits = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            threading.Timer(1.0, conn.close).start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


async def test_remote_refs_are_never_fetched(harness: Harness) -> None:
    token, _ = await make_key(harness)
    listener = _Listener()
    try:
        schema = {"type": "object", "properties": {"env": {"$ref": f"{listener.url}/s.json"}}}
        started = time.monotonic()
        r = await create(harness, token, tool="deploy", schema=schema, arguments={"env": "x"})
        assert time.monotonic() - started < 5
        assert "schema" in _error(r) and "$ref" in _error(r)
        assert listener.hits == 0
    finally:
        listener.close()


async def test_local_refs_still_work(harness: Harness) -> None:
    token, _ = await make_key(harness)
    schema = {
        "type": "object",
        "$defs": {"env": {"enum": ["staging", "production"]}},
        "properties": {"env": {"$ref": "#/$defs/env"}},
    }
    r = await create(harness, token, tool="deploy", schema=schema, arguments={"env": "moon"})
    assert "arguments.env" in _error(r)
    r = await create(harness, token, tool="deploy", schema=schema, arguments={"env": "staging"})
    assert r.status_code == 201, r.text


async def test_a_catastrophic_pattern_does_not_stall_the_bot(harness: Harness) -> None:
    token, _ = await make_key(harness)
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}
    evil = "a" * 40 + "!"

    async def probe() -> float:
        await asyncio.sleep(0.2)
        started = time.monotonic()
        async with http(harness, None) as client:
            await client.get("/v1/openapi.json")
        return time.monotonic() - started

    slow = asyncio.create_task(
        create(harness, token, tool="deploy", schema=schema, arguments={"name": evil})
    )
    probe_time = await probe()
    r = await asyncio.wait_for(slow, 10)
    assert probe_time < 1.0
    assert r.status_code == 422 and "arguments.name" in r.json()["error"]["message"], r.text
    # lookarounds and backreferences (not linear) are refused by name
    schema = {"type": "object", "properties": {"n": {"type": "string", "pattern": "(a)\\1"}}}
    assert "pattern" in _error(await create(harness, token, tool="deploy", schema=schema))


async def test_self_referencing_schemas_are_422(harness: Harness) -> None:
    token, _ = await make_key(harness)
    schema = {
        "type": "object",
        "$defs": {"loop": {"$ref": "#/$defs/loop"}},
        "properties": {"x": {"$ref": "#/$defs/loop"}},
    }
    r = await create(harness, token, tool="deploy", schema=schema, arguments={"x": 1})
    assert "schema" in _error(r) or "arguments" in _error(r)


async def test_schemas_are_bounded_in_size_and_depth(harness: Harness) -> None:
    token, _ = await make_key(harness)
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"a": deep}}
    assert "schema" in _error(await create(harness, token, tool="deploy", schema=deep))
    wide = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "enum": ["x" * 50] * 20} for i in range(400)},
    }
    assert "schema" in _error(await create(harness, token, tool="deploy", schema=wide))
