"""The real bot in Socket Mode: everything reaches it over the sandbox's WebSocket, no HTTP.

In-process (build_bot + AsyncSocketModeHandler, as `serve_socket` does) for the approve and
the modal-error flows, and `python -m bot.cli run --mode socket` as a subprocess for the CLI.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.compose import build_bot
from bot.sandbox import SlackSandbox
from bot.serve import free_port
from bot.service.registry import AgentRegistry
from bot.testing import FakeModelServer
from tests.e2e.agents import make_agents
from tests.e2e.flows import DEPLOY, start_deploy
from tests.e2e.harness import TOKEN, Harness, has_button, message_text
from tests.helpers.views import filled_views

APP_TOKEN = "xapp-sandbox"


def socket_envelopes(sandbox: SlackSandbox) -> set[str]:
    return {e["type"] for e in sandbox.socket.envelopes}


@pytest.fixture
async def socket_harness(tmp_path: Path) -> AsyncIterator[Harness]:
    """The harness with the bot connected over Socket Mode; the sandbox has no bot_url."""
    model = FakeModelServer()
    await model.start()
    sandbox = SlackSandbox(signing_secret="unused", bot_token=TOKEN, app_token=APP_TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    h = Harness(tmp_path, sandbox, model)
    h.settings_overrides = {"slack_app_token": APP_TOKEN, "slack_signing_secret": None}
    h.bot = build_bot(h.settings(), AgentRegistry(make_agents(model.base_url, h.effects)))
    await h.bot.start()
    handler = AsyncSocketModeHandler(h.bot.app, APP_TOKEN, web_client=h.bot.client)
    await handler.connect_async()
    await sandbox.wait_for(lambda sb: sb.socket.num_connections == 1, timeout=5)
    try:
        yield h
    finally:
        await handler.close_async()
        await h.bot.stop()
        await sandbox.stop()
        await model.stop()


async def test_approve_over_the_socket(socket_harness: Harness) -> None:
    h = socket_harness
    card = await start_deploy(h)
    d = await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert d.ok
    await h.sandbox.wait_for(lambda sb: "Deployed v2 to staging." in h.thread_text(), timeout=10)
    assert [(x["environment"], x["version"]) for x in h.effects.deploys] == [("staging", "v2")]
    assert not has_button(h.sandbox.message("C_GENERAL", card["ts"]), "approve")
    assert socket_envelopes(h.sandbox) == {"slash_commands", "interactive"}
    assert all(d.request.get("envelope") for d in h.sandbox.deliveries)


async def test_modal_errors_and_edit_over_the_socket(socket_harness: Harness) -> None:
    h = socket_harness
    card = await start_deploy(h)
    d = await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    assert d.ok
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    bad = await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "many"})
    assert bad.ok and bad.body["response_action"] == "errors"
    assert "replicas" in h.sandbox.view_errors(view["id"])
    assert h.sandbox.view_is_open(view["id"]) and h.effects.deploys == []

    good = await h.sandbox.submit_view("U_APPROVER", view["id"], {"version": "v3"})
    assert good.ok and not h.sandbox.view_is_open(view["id"])
    await h.sandbox.wait_for(lambda sb: "Deployed v2 to staging." in h.thread_text(), timeout=10)
    assert [x["version"] for x in h.effects.deploys] == ["v3"]


async def test_events_and_app_home_over_the_socket(socket_harness: Harness) -> None:
    h = socket_harness
    d = await h.sandbox.open_home("U_APPROVER")
    assert d.ok
    await h.sandbox.wait_for(lambda sb: sb.home("U_APPROVER"), timeout=10)
    assert "events_api" in socket_envelopes(h.sandbox)


# -- the CLI as a subprocess --------------------------------------------------------------


async def wait_for_log(stream: asyncio.StreamReader, needle: str, within: float) -> list[str]:
    lines: list[str] = []

    async def read() -> None:
        while True:
            raw = await stream.readline()
            if not raw:
                raise AssertionError("sayso exited:\n" + "".join(lines))
            lines.append(raw.decode())
            if needle in lines[-1]:
                return

    try:
        await asyncio.wait_for(read(), within)
    except TimeoutError:
        raise AssertionError(f"no {needle!r} within {within}s:\n" + "".join(lines)) from None
    return lines


async def test_cli_run_mode_socket(tmp_path: Path) -> None:
    model = FakeModelServer()
    await model.start()
    sandbox = SlackSandbox(signing_secret="unused", bot_token=TOKEN, app_token=APP_TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "SAYSO_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))
    }
    env.update(
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_APP_TOKEN=APP_TOKEN,
        SLACK_API_URL=sandbox.api_url,
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY="test-key",
        SAYSO_LOG_LEVEL="INFO",
    )
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--mode",
        "socket",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        cwd=tmp_path,  # no .env from the repository
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    drain: asyncio.Task[None] | None = None
    try:
        await wait_for_log(proc.stderr, "event=listening mode=socket", within=30)
        drain = asyncio.ensure_future(_drain(proc.stderr))
        await sandbox.wait_for(lambda sb: sb.socket.num_connections == 1, timeout=10)

        model.reply(tool_calls=[("deploy", DEPLOY)])
        model.reply(text="Deployed v2 to staging.")
        d = await sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
        assert d.ok
        card = await sandbox.wait_for(lambda sb: _card(sb), timeout=15)
        assert "staging" in message_text(card)
        d = await sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        assert d.ok
        await sandbox.wait_for(lambda sb: "Deployed v2 to staging." in _thread_text(sb), timeout=15)
        assert {e["type"] for e in sandbox.socket.envelopes} >= {"slash_commands", "interactive"}
        assert model.pending == 0 and len(model.requests) == 2  # the fake model answered
        assert not model.violations
        # the port still serves /healthz and the approval API, never /slack/events
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/v1/openapi.json")).json()["openapi"] == "3.1.0"
            assert (await http.post("/v1/requests", json={})).status_code == 401
            assert (await http.post("/slack/events", content="{}")).status_code in (404, 405)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        if drain is not None:
            drain.cancel()
        await sandbox.stop()
        await model.stop()
    assert code == 0


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


def _thread_text(sb: SlackSandbox) -> str:
    root = sb.messages("C_GENERAL")[-1]
    return "\n".join(message_text(m) for m in sb.thread("C_GENERAL", root["ts"]))


def _card(sb: SlackSandbox) -> dict | None:
    root = sb.messages("C_GENERAL")[-1]
    cards = [m for m in sb.thread("C_GENERAL", root["ts"]) if has_button(m, "approve")]
    return cards[0] if cards else None
