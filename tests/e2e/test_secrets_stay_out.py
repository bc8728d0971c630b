"""Finding 2 of issue 11: exception text never carries a secret into Slack or the logs.

A failure shows its type, its text scrubbed and a short error id, the same id as in the log
line; a tool that raises `bot.ToolError` shows its message as written."""

from __future__ import annotations

import json
import logging
import re

import httpx
import pytest

from bot import ToolError
from bot.agent import Agent
from bot.agent.models import ModelSettings, OpenAIChatModel
from bot.serve import free_port
from tests.e2e.harness import Harness, has_button, message_text

API_KEY = "k3y-0f-the-weather-api"
PROVIDER_KEY = "sk-live-9f8e7d6c5b4a39281706"
MODEL_PASSWORD = "hunter2-model-password"
ERROR_ID = re.compile(r"error id ([0-9a-f]{8})")


def slack_traffic(h: Harness) -> str:
    """Every Web API call the bot made (what Slack received), as one text."""
    return json.dumps([{"method": c.method, "args": c.args} for c in h.sandbox.calls])


def assert_nowhere(h: Harness, caplog: pytest.LogCaptureFixture, *secrets: str) -> None:
    sent, logged = slack_traffic(h), caplog.text
    for secret in secrets:
        assert secret not in sent, f"{secret!r} reached Slack"
        assert secret not in logged, f"{secret!r} reached the logs"


async def failure_shown(h: Harness) -> str:
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    await h.idle()
    return h.thread_text()


async def test_a_tool_http_error_with_an_api_key_shows_type_and_error_id(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness
    missing = f"{h.model.url}/weather/today?city=Oslo&api_key={API_KEY}"

    async def get_status(service: str) -> dict:
        async with httpx.AsyncClient() as client:
            response = await client.get(missing)
            response.raise_for_status()  # 404: the error names the URL, key included
        return {}

    tool = h.bot.service.agents.tool("ops", "get_status")
    assert tool is not None
    tool.fn = get_status
    h.model.reply(tool_calls=[("get_status", {"service": "api"})])
    h.model.reply(text="The status check failed.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is the api")
    await h.sandbox.wait_for(lambda sb: "The status check failed." in h.thread_text())
    await h.idle()
    shown = h.thread_text()
    assert "`get_status` failed" in shown and "HTTPStatusError" in shown
    assert "api_key=***" in shown  # the rest of the text stays readable
    error_id = ERROR_ID.search(shown)
    assert error_id and f"error_id={error_id.group(1)}" in caplog.text
    sent_to_model = json.dumps(h.model.last_request["messages"])
    assert API_KEY not in sent_to_model
    assert_nowhere(h, caplog, API_KEY)


async def test_a_provider_401_body_with_a_key_is_scrubbed(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness
    h.model.fail(401, message=f"Incorrect API key provided: {PROVIDER_KEY}. Check your key.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    shown = await failure_shown(h)
    assert "The run failed" in shown and "401" in shown and "ModelError" in shown
    error_id = ERROR_ID.search(shown)
    assert error_id and f"error_id={error_id.group(1)}" in caplog.text
    assert_nowhere(h, caplog, PROVIDER_KEY, PROVIDER_KEY[3:])
    run = (await h.bot.store.runs.list())[0]
    assert run.status == "failed"


async def test_a_model_url_with_a_password_is_scrubbed(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness
    await h.stop_bot()
    closed = f"http://admin:{MODEL_PASSWORD}@127.0.0.1:{free_port()}/v1"
    model = OpenAIChatModel("fake", base_url=closed, api_key="test-key")
    quick = ModelSettings(timeout=5, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    await h.start_bot([Agent(id="ops", model=model, model_settings=quick)])
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    shown = await failure_shown(h)
    assert "Model request" in shown and "***@127.0.0.1" in shown
    error_id = ERROR_ID.search(shown)
    assert error_id and f"error_id={error_id.group(1)}" in caplog.text
    assert_nowhere(h, caplog, MODEL_PASSWORD)


async def test_a_tool_error_is_shown_as_written(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    message = "The deploy window is closed: try again after 18:00 UTC (ticket OPS-1234)."

    def get_status(service: str) -> dict:
        raise ToolError(message)

    tool = h.bot.service.agents.tool("ops", "get_status")
    assert tool is not None
    tool.fn = get_status
    h.model.reply(tool_calls=[("get_status", {"service": "api"})])
    h.model.reply(text="Not now.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is the api")
    await h.sandbox.wait_for(lambda sb: "Not now." in h.thread_text())
    progress = [message_text(m) for m in h.thread() if "failed" in message_text(m)]
    assert any(message in text for text in progress), progress
    assert message in json.dumps(h.model.requests[-1]["messages"])
