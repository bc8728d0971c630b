"""SAYSO_LOG_FORMAT=json: every line a real `sayso run` writes (its own, Bolt's, slack-sdk's,
aiohttp's, asyncio's) is one JSON object with `level` and `event`, today's key=value pairs as
keys, and no secret."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

import httpx

from bot.agent.scrub import install_log_scrubbing
from bot.ops.logs import JsonFormatter
from bot.sandbox import SlackSandbox
from bot.serve import free_port
from tests.helpers.waiting import eventually
from tests.ops.helpers import ROOT, cli_env

SECRET = "json-logs-signing-secret"
TOKEN = "xoxb-sandbox"


async def test_a_real_sayso_run_logs_only_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sandbox = SlackSandbox(signing_secret=SECRET, bot_url="http://127.0.0.1:1/", bot_token=TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    port = free_port()
    env = cli_env(
        f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        SAYSO_LOG_FORMAT="json",
        SAYSO_LOG_LEVEL="DEBUG",
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=sandbox.api_url,
        OPENAI_API_KEY="",
        OPENAI_BASE_URL="",
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--mode",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        env=env,
        cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with httpx.AsyncClient() as client:

            async def ready() -> bool:
                try:
                    return (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
                except httpx.HTTPError:
                    return False

            for _ in range(200):
                if await ready():
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("sayso run never became ready")
            # an unsigned request: Bolt refuses it (and says so in the log)
            refused = await client.post(
                f"http://127.0.0.1:{port}/slack/events", content=b"command=%2Fsayso&text=x"
            )
            assert refused.status_code == 401
        sandbox.bot_url = f"http://127.0.0.1:{port}/slack/events"
        await sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
        await eventually(lambda: len(sandbox.messages("C_GENERAL")) >= 1, timeout=20)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        await sandbox.stop()
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert len(lines) > 5
    objects = []
    for line in lines:
        obj = json.loads(line)  # every line: JSON
        assert isinstance(obj, dict) and obj["level"] and obj["event"], line
        objects.append(obj)
    listening = [o for o in objects if o["event"] == "listening"]
    assert listening and listening[0]["mode"] == "http" and listening[0]["logger"] == "sayso"
    loggers = {o["logger"] for o in objects}
    assert any(not name.startswith("sayso") for name in loggers), loggers  # libraries' lines
    assert "sayso.bolt" in loggers  # Bolt's own lines (its logger is sayso.bolt)
    assert any(o.get("run_id") for o in objects), "run ids are keys"
    assert TOKEN not in err.decode() and SECRET not in err.decode()


def test_the_formatter_keeps_secrets_out_and_tracebacks_in() -> None:
    install_log_scrubbing()
    logger = logging.getLogger("tests.json")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError("token=xoxb-123-abc failed")
        except RuntimeError:
            logger.exception("event=call_failed run_id=r1 url=https://u:pw@host/x")
    finally:
        logger.removeHandler(handler)
    line = JsonFormatter().format(records[0])
    obj = json.loads(line)
    assert obj["event"] == "call_failed" and obj["run_id"] == "r1" and obj["level"] == "error"
    assert "xoxb-123" not in line and "pw@" not in line
    assert "RuntimeError" in obj["exception"]
