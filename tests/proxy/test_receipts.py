"""Signed receipts: a decision bound to the SHA-256 of the arguments that will run. Unit checks
of `bot.client.verify_receipt`, and the receipts a live sayso serves: in GET /v1/requests/{id},
in webhooks, with its public key at /v1/receipts/public-key, stable across reads."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.client import ReceiptRefused, SaysoClient, verify_receipt
from bot.receipts import ReceiptSigner, arguments_sha256, canonical_json, new_signing_key
from bot.serve import free_port
from tests.e2e.api_flows import create, http
from tests.proxy.conftest import Live

ARGS = {"environment": "production", "version": "v2", "replicas": 3}
DECIDED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def receipt(signer: ReceiptSigner, **changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "request_id": "req-1",
        "tool": "deploy",
        "arguments": ARGS,
        "decision": "approve",
        "decided_by": "U_APPROVER",
        "decided_at": DECIDED,
        "rule": "production",
    }
    fields.update(changes)
    return signer.receipt(**fields)


@pytest.fixture
def signer() -> ReceiptSigner:
    return ReceiptSigner.from_text(new_signing_key())


def test_a_receipt_verifies_and_is_deterministic(signer: ReceiptSigner) -> None:
    r = receipt(signer)
    soon = DECIDED + timedelta(minutes=5)
    assert verify_receipt(r, "deploy", dict(reversed(ARGS.items())), signer.public_key, now=soon)
    assert r == receipt(signer)  # the same decision, the same receipt
    assert r["arguments_sha256"] == arguments_sha256(ARGS)
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    pem = signer.public_key_body()["pem"]
    assert verify_receipt(r, "deploy", ARGS, pem, now=soon)


@pytest.mark.parametrize(
    ("tool", "arguments", "why"),
    [
        ("deploy", {**ARGS, "replicas": 30}, "arguments differ"),
        ("deploy", {**ARGS, "force": True}, "arguments differ"),
        ("deploy", {"environment": "production", "version": "v2"}, "arguments differ"),
        ("rollback", ARGS, "not 'rollback'"),
    ],
)
def test_a_changed_argument_or_tool_is_refused(
    signer: ReceiptSigner, tool: str, arguments: dict[str, Any], why: str
) -> None:
    with pytest.raises(ReceiptRefused, match=why):
        verify_receipt(receipt(signer), tool, arguments, signer.public_key, now=DECIDED)


def test_an_expired_receipt_a_wrong_key_or_an_altered_receipt_is_refused(
    signer: ReceiptSigner,
) -> None:
    r = receipt(signer)
    later = DECIDED + timedelta(hours=1, seconds=1)
    with pytest.raises(ReceiptRefused, match="expired"):
        verify_receipt(r, "deploy", ARGS, signer.public_key, now=later)
    other = ReceiptSigner.from_text(new_signing_key())
    with pytest.raises(ReceiptRefused, match="signature"):
        verify_receipt(r, "deploy", ARGS, other.public_key, now=DECIDED)
    for field, value in [
        ("arguments_sha256", arguments_sha256({**ARGS, "replicas": 30})),
        ("decided_by", "U_MALLORY"),
        ("expires_at", "2099-01-01T00:00:00Z"),
    ]:
        with pytest.raises(ReceiptRefused, match="signature"):
            verify_receipt({**r, field: value}, "deploy", ARGS, signer.public_key, now=DECIDED)
    rejected = receipt(signer, decision="reject")
    with pytest.raises(ReceiptRefused, match="reject"):
        verify_receipt(rejected, "deploy", ARGS, signer.public_key, now=DECIDED)
    with pytest.raises(ReceiptRefused):
        verify_receipt(None, "deploy", ARGS, signer.public_key)


def test_the_client_verifies_without_the_server() -> None:
    code = (
        "import sys, bot.client; "
        "print(sorted(m for m in ('sqlalchemy', 'aiohttp', 'store') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_sayso_keys_signing_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "keys", "signing-key"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    line = done.stdout.splitlines()[0]
    assert line.startswith("SAYSO_SIGNING_KEY=ed25519:")
    key = line.split("=", 1)[1]
    assert ReceiptSigner.from_text(key).public_key in done.stdout


class Receiver:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.port = free_port()

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(json.loads(await request.read()))
        return web.Response()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    app = web.Application()
    app.router.add_post("/hook", r.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", r.port).start()
    try:
        yield r
    finally:
        await runner.cleanup()


async def test_get_and_webhooks_carry_the_receipt(live: Live, receiver: Receiver) -> None:
    h = live.h
    async with httpx.AsyncClient() as client:
        served = (await client.get(f"{h.url}/v1/receipts/public-key")).json()
    assert served["public_key"] == live.signer.public_key and served["algorithm"] == "Ed25519"
    callback = f"http://127.0.0.1:{receiver.port}/hook"
    created = (
        await create(h, live.key, tool="deploy", arguments=ARGS, callback_url=callback)
    ).json()
    async with http(h, live.key) as client:
        pending = (await client.get(f"/v1/requests/{created['id']}")).json()
        assert pending["receipt"] is None  # undecided: no receipt
        await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "approve")
        state = (await client.get(f"/v1/requests/{created['id']}?wait=10")).json()
        again = (await client.get(f"/v1/requests/{created['id']}")).json()
    r = state["receipt"]
    assert r["request_id"] == created["id"] and r["decided_by"] == "U_APPROVER"
    assert again["receipt"] == r  # made again at each read: the same
    verify_receipt(r, "deploy", ARGS, served["public_key"])
    with pytest.raises(ReceiptRefused):
        verify_receipt(r, "deploy", {**ARGS, "version": "v3"}, served["public_key"])
    for _ in range(100):
        if receiver.bodies:
            break
        await asyncio.sleep(0.05)
    assert receiver.bodies[0]["receipt"] == r
    key = await asyncio.to_thread(SaysoClient(h.url, live.key).public_key)
    assert key == live.signer.public_key


async def test_mcp_results_carry_the_receipt(live: Live) -> None:
    """sayso's own MCP server (request_approval) answers with the decision's signed receipt."""
    from tests.e2e.mcp_flows import mcp_http, next_card

    h = live.h
    async with mcp_http(h, live.key) as session:
        asked = asyncio.create_task(
            session.call_tool(
                "request_approval",
                {"tool_name": "deploy", "arguments": ARGS, "wait_seconds": 30},
            )
        )
        card = await next_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        result = await asked
    state = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert state["status"] == "approved"
    verify_receipt(state["receipt"], "deploy", ARGS, live.signer.public_key)
