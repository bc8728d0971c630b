"""`SAYSO_EVENT_LOOP`: uvloop by default where it imports, asyncio's loop on request, and a
clear refusal for a value it does not know or a uvloop that is not there. (`sayso run` on
uvloop, front and embedded worker, end to end: tests/test_run_with_worker.py.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot import event_loop


async def _kind() -> str:
    return event_loop.running()


def test_auto_runs_on_uvloop_where_it_is_installed() -> None:
    assert event_loop.run(_kind()) == "uvloop"
    assert event_loop.run(_kind(), "uvloop") == "uvloop"


def test_asyncio_runs_on_asyncios_own_loop() -> None:
    assert event_loop.run(_kind(), "asyncio") == "asyncio"


def test_auto_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert event_loop.run(_kind()) == "asyncio"
    coro = _kind()
    with pytest.raises(event_loop.EventLoopError, match="SAYSO_EVENT_LOOP=uvloop"):
        event_loop.run(coro, "uvloop")
    assert coro.cr_frame is None  # closed, not left to warn "never awaited"


def _sayso(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SAYSO_"))}
    base.update(
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET="secret",
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_unknown_loop_is_refused_in_one_line(tmp_path: Path) -> None:
    code = "from bot.cli import main; main(['worker'])"
    result = _sayso(tmp_path, code, SAYSO_EVENT_LOOP="tokio")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "SAYSO_EVENT_LOOP" in lines[0], result.stderr
    assert not (tmp_path / "sayso.db").exists()  # refused before anything started


def test_uvloop_asked_for_but_missing_is_refused_in_one_line(tmp_path: Path) -> None:
    code = "import sys; sys.modules['uvloop'] = None; from bot.cli import main; main(['worker'])"
    result = _sayso(tmp_path, code, SAYSO_EVENT_LOOP="uvloop")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        "sayso: SAYSO_EVENT_LOOP=uvloop but uvloop is not installed (pip install uvloop)"
    ]
    assert not (tmp_path / "sayso.db").exists()


def test_a_loop_of_its_own_per_run() -> None:
    """Each `run` gets a new loop and closes it: the embedded worker's thread relies on it."""
    loops: list[asyncio.AbstractEventLoop] = []

    async def keep() -> None:
        loops.append(asyncio.get_running_loop())

    event_loop.run(keep())
    event_loop.run(keep())
    assert loops[0] is not loops[1] and all(loop.is_closed() for loop in loops)
