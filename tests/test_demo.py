"""`sayso demo` on a fresh directory: page up, a request gets a card, Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bot.serve import free_port
from tests.helpers.waiting import eventually_sync


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_demo_runs_the_bundled_agent_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SAYSO_", "OPENAI_"))}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "demo", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def output() -> str:
        return proc.stdout.read() if proc.stdout and proc.poll() is not None else ""

    def page() -> str:
        assert proc.poll() is None, f"sayso demo exited:\n{output()}"
        return _get(base + "/")

    def help_answered() -> bool:  # the bot starts right after the page
        answer = _post(base + "/sandbox/ui/command", {"user": "U_REQUESTER", "text": "/sayso help"})
        return answer["delivery"]["status"] == 200

    try:
        assert "<html" in eventually_sync(page, timeout=30, what="the page", ignoring=(OSError,))
        eventually_sync(help_answered, timeout=20, what="the bot to answer /sayso help")
        _post(
            base + "/sandbox/ui/command",
            {"user": "U_REQUESTER", "text": "/sayso deploy v2 to staging"},
        )
        eventually_sync(
            lambda: "Approval needed" in _get(base + "/sandbox/state?user=U_APPROVER"),
            timeout=20,
            what="an approval card for U_APPROVER",
            detail=lambda: _get(base + "/sandbox/state?user=U_APPROVER")[:3000],
        )
        assert (tmp_path / "sayso-demo.db").exists()
    finally:
        interrupted = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
        stopped_after = time.monotonic() - interrupted
    assert proc.returncode == 0, out
    assert stopped_after < 2.0, f"sayso demo took {stopped_after:.1f}s to stop after Ctrl-C"
    assert f"http://127.0.0.1:{port}/" in out
    assert "Traceback" not in out
