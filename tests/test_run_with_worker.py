"""`sayso run`: a front and its embedded worker (own thread, own event loop) in one process
on SQLite, against the sandbox: a run starts, pauses, is approved and answers; SIGTERM stops
it cleanly. `sayso worker` refuses to start without a bot token, in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from bot.sandbox import SlackSandbox
from bot.serve import free_port
from tests.helpers.waiting import eventually

SECRET = "run-with-worker-secret"
TOKEN = "xoxb-sandbox"


def env_for(sandbox: SlackSandbox, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SAYSO_", "OPENAI_"))}
    env.pop("DATABASE_URL", None)
    env.update(
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=sandbox.api_url,
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        SAYSO_SWEEP_INTERVAL="30",  # the front wakes its worker in-process: no sweep needed
        PYTHONUNBUFFERED="1",
    )
    return env


def spawn(
    args: list[str], tmp_path: Path, sandbox: SlackSandbox, log_path: Path
) -> subprocess.Popen[bytes]:
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", *args],
            cwd=tmp_path,
            env=env_for(sandbox, tmp_path),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


async def test_sayso_run_drives_runs_on_its_embedded_worker_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    sandbox = SlackSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    port = free_port()
    log_path = tmp_path / "sayso.log"
    proc = spawn(["run", "--mode", "http", "--port", str(port)], tmp_path, sandbox, log_path)

    def logs() -> str:
        return log_path.read_text(errors="replace")

    try:
        async with aiohttp.ClientSession() as session:

            async def healthy() -> bool:
                assert proc.poll() is None, logs()
                async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                    return resp.status == 200

            await eventually(
                healthy, timeout=30, detail=logs, ignoring=(aiohttp.ClientError,), what="healthz"
            )
        sandbox.bot_url = f"http://127.0.0.1:{port}/slack/events"
        delivery = await sandbox.slash_command("U_REQUESTER", "deploy v2 to staging")
        assert delivery.ok, delivery.summary()

        def card(sb: SlackSandbox) -> dict | None:
            root = sb.messages("C_GENERAL")[-1]
            thread = sb.thread("C_GENERAL", root["ts"])
            return next((m for m in thread if "Approval needed" in m.get("text", "")), None)

        posted = await sandbox.wait_for(card, timeout=20)
        clicked = await sandbox.click("U_APPROVER", "C_GENERAL", posted["ts"], "approve")
        assert clicked.ok, clicked.summary()

        def completed(sb: SlackSandbox) -> bool:
            return "Completed" in str(sb.messages("C_GENERAL")[-1].get("blocks"))

        await sandbox.wait_for(completed, timeout=20)
        # both loops, the front's and the embedded worker's thread's, run on uvloop (installed
        # with sayso; SAYSO_EVENT_LOOP unset means auto)
        listening = next(line for line in logs().splitlines() if "event=listening" in line)
        assert "worker=True" in listening and "loop=uvloop" in listening, listening
        started = next(line for line in logs().splitlines() if "event=worker_started" in line)
        assert "loop=uvloop" in started, started
        # the run went to the embedded worker as the front claimed it, at its start and with
        # its decision: no release, wake-up and claim in between
        assert logs().count("event=run_given_to_local_worker") == 2, logs()
    finally:
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            await sandbox.stop()
    assert proc.returncode == 0, logs()
    assert time.monotonic() - stopping < 10, logs()
    assert "Traceback" not in logs()
    assert "event=worker_stopped" in logs()


def test_sayso_worker_without_a_bot_token_says_so_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SAYSO_"))}
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "worker", "--concurrency", "5"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "SLACK_BOT_TOKEN is not set" in lines[0], result.stderr
