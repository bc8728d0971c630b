"""`sayso demo` on a fresh directory: page up, a request gets a card, Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    port = _free_port()
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
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                page = _get(base + "/")
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, "demo did not start"
                time.sleep(0.2)
        assert "<html" in page.lower()
        time.sleep(0.5)  # the bot starts right after the page
        _post(
            base + "/sandbox/ui/command",
            {"user": "U_REQUESTER", "text": "/sayso deploy v2 to staging"},
        )
        deadline = time.monotonic() + 20
        while "Approval needed" not in _get(base + "/sandbox/state?user=U_APPROVER"):
            assert time.monotonic() < deadline, _get(base + "/sandbox/state?user=U_APPROVER")[:3000]
            time.sleep(0.2)
        assert (tmp_path / "sayso-demo.db").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    assert f"http://127.0.0.1:{port}/" in out
    assert "Traceback" not in out
