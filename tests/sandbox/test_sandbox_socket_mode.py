"""Socket Mode: with slack_sdk's aiohttp SocketModeClient connected, deliveries go over the
WebSocket as envelopes and the ack's payload counts exactly like an HTTP ack body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox
from tests.sandbox.tiny_bot import SECRET, TOKEN

APP_TOKEN = "xapp-sandbox-test"

Answer = Callable[[SocketModeRequest], dict[str, Any] | None]


class SocketApp:
    """A Socket Mode app: records requests; `answer(req)` is the ack payload (None = empty)."""

    def __init__(self, sandbox: SlackSandbox) -> None:
        web = AsyncWebClient(base_url=sandbox.api_url, token=TOKEN)
        self.client = SocketModeClient(app_token=APP_TOKEN, web_client=web, ping_interval=30)
        self.client.socket_mode_request_listeners.append(self.handle)
        self.hellos: list[dict[str, Any]] = []
        self.client.message_listeners.append(self.on_message)
        self.requests: list[SocketModeRequest] = []
        self.answer: Answer = lambda req: None

    async def on_message(self, client: Any, message: dict[str, Any], raw: str | None) -> None:
        if message.get("type") == "hello":
            self.hellos.append(message)

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:
        self.requests.append(req)
        ack = SocketModeResponse(req.envelope_id, self.answer(req))
        await client.send_socket_mode_response(ack)


@pytest.fixture
async def socket_sandbox() -> AsyncIterator[SlackSandbox]:
    sb = SlackSandbox(signing_secret=SECRET, bot_token=TOKEN, app_token=APP_TOKEN)
    await sb.start(host="127.0.0.1", port=0)
    try:
        yield sb
    finally:
        await sb.stop()


@pytest.fixture
async def app(socket_sandbox: SlackSandbox) -> AsyncIterator[SocketApp]:
    socket_app = SocketApp(socket_sandbox)
    await socket_app.client.connect()
    await socket_sandbox.wait_for(lambda sb: sb.socket.connected, timeout=5)
    try:
        yield socket_app
    finally:
        await socket_app.client.close()


async def test_connections_open_checks_the_app_token(socket_sandbox: SlackSandbox) -> None:
    opened = await AsyncWebClient(base_url=socket_sandbox.api_url).apps_connections_open(
        app_token=APP_TOKEN
    )
    assert opened["url"].startswith(socket_sandbox.url.replace("http", "ws") + "/sandbox/socket?")
    for token, error in (("xapp-wrong", "invalid_auth"), (TOKEN, "not_allowed_token_type")):
        with pytest.raises(SlackApiError) as caught:
            await AsyncWebClient(base_url=socket_sandbox.api_url).apps_connections_open(
                app_token=token
            )
        assert caught.value.response["error"] == error
    assert [c.response["ok"] for c in socket_sandbox.calls_to("apps.connections.open")] == [
        True,
        False,
        False,
    ]


async def test_hello_then_slash_command_envelope_and_ack_body(
    socket_sandbox: SlackSandbox, app: SocketApp
) -> None:
    await socket_sandbox.wait_for(lambda sb: app.hellos, timeout=5)
    assert app.hellos[0]["num_connections"] == 1
    assert app.hellos[0]["connection_info"] == {"app_id": "A_SAYSO"}
    app.answer = lambda req: {"text": "Starting ops…"}
    delivery = await socket_sandbox.slash_command("U_REQUESTER", "ops deploy v2")
    assert delivery.ok and delivery.status == 200
    req = app.requests[-1]
    assert req.type == "slash_commands" and req.accepts_response_payload
    assert req.payload["command"] == "/sayso" and req.payload["text"] == "ops deploy v2"
    assert req.payload["trigger_id"] == delivery.trigger_id
    assert [e["text"] for e in socket_sandbox.ephemerals("U_REQUESTER")] == ["Starting ops…"]
    assert socket_sandbox.socket.envelopes[-1]["envelope_id"] == req.envelope_id


async def test_events_and_clicks_over_the_socket(
    socket_sandbox: SlackSandbox, app: SocketApp, kit
) -> None:
    client = AsyncWebClient(base_url=socket_sandbox.api_url, token=TOKEN)
    await socket_sandbox.post_message("U_REQUESTER", "hi <@U_SAYSO>")
    kinds = [(r.type, r.payload["event"]["type"]) for r in app.requests]
    assert kinds == [("events_api", "app_mention"), ("events_api", "message")]
    assert app.requests[0].payload["type"] == "event_callback"
    assert app.requests[0].retry_attempt == 0 and not app.requests[0].accepts_response_payload

    event_id = socket_sandbox.deliveries[-1].event_id
    assert event_id is not None
    await socket_sandbox.redeliver(event_id, retry_num=2)
    assert (app.requests[-1].retry_attempt, app.requests[-1].retry_reason) == (2, "http_timeout")

    sent = await client.chat_postMessage(channel="C_GENERAL", text="x", blocks=kit.card_blocks())
    delivery = await socket_sandbox.click("U_APPROVER", "C_GENERAL", sent["ts"], "approve")
    assert delivery.ok
    req = app.requests[-1]
    assert req.type == "interactive" and req.payload["type"] == "block_actions"
    assert req.payload["actions"][0]["action_id"] == "approve"


async def test_view_submission_response_action_over_the_socket(
    socket_sandbox: SlackSandbox, app: SocketApp, kit
) -> None:
    client = AsyncWebClient(base_url=socket_sandbox.api_url, token=TOKEN)

    async def open_modal() -> str:
        await socket_sandbox.slash_command("U_REQUESTER", "edit")
        trigger = app.requests[-1].payload["trigger_id"]
        opened = await client.views_open(trigger_id=trigger, view=kit.modal())
        return opened["view"]["id"]

    view_id = await open_modal()
    app.answer = lambda req: (
        {"response_action": "errors", "errors": {"reason": "Say why."}}
        if req.payload.get("type") == "view_submission"
        else None
    )
    delivery = await socket_sandbox.submit_view("U_REQUESTER", view_id, {"reason": "x"})
    assert delivery.ok and app.requests[-1].accepts_response_payload
    assert socket_sandbox.view_is_open(view_id)
    assert socket_sandbox.view_errors(view_id) == {"reason": "Say why."}

    app.answer = lambda req: None  # an empty ack closes the modal
    await socket_sandbox.submit_view("U_REQUESTER", view_id, {"reason": "because"})
    assert not socket_sandbox.view_is_open(view_id)


async def test_without_a_socket_client_http_is_used(socket_sandbox: SlackSandbox) -> None:
    delivery = await socket_sandbox.slash_command("U_REQUESTER", "help")
    assert delivery.status == 0 and delivery.error == "no bot_url set"
    assert not socket_sandbox.socket.connected


async def test_a_missing_ack_fails_the_slash_command(
    socket_sandbox: SlackSandbox, app: SocketApp
) -> None:
    app.client.socket_mode_request_listeners.clear()  # the app receives but never acks
    socket_sandbox.socket.ack_timeout = 0.05
    delivery = await asyncio.wait_for(socket_sandbox.slash_command("U_REQUESTER", "x"), 15)
    assert not delivery.ok and delivery.timed_out
    assert "dispatch_failed" in socket_sandbox.ephemerals("U_REQUESTER")[-1]["text"]


async def test_disconnect_makes_the_client_reconnect(
    socket_sandbox: SlackSandbox, app: SocketApp
) -> None:
    await socket_sandbox.socket.disconnect()
    await socket_sandbox.wait_for(
        lambda sb: len(sb.calls_to("apps.connections.open")) == 2 and sb.socket.num_connections,
        timeout=10,
    )
    app.answer = lambda req: {"text": "still here"}
    delivery = await socket_sandbox.slash_command("U_REQUESTER", "ping")
    assert delivery.ok and socket_sandbox.ephemerals("U_REQUESTER")[-1]["text"] == "still here"
