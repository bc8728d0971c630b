"""What the proxy and hook tests share: a live sayso (the e2e harness: the real bot between the
sandbox Slack and a fake model) with receipts on, an API key, a git repository, and
`sayso proxy` in front of the reference `mcp-server-git`, reached with the `mcp` SDK's client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.e2e.harness import Harness, has_button

CLIENT = types.Implementation(name="sayso-proxy-test", version="1.0")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "t")
    git(path, "config", "user.email", "t@example.com")
    git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def stage(repo: Path, name: str = "a.txt", text: str = "hello\n") -> None:
    (repo / name).write_text(text)
    git(repo, "add", name)


def commits(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def proxy_env(h: Harness, key: str, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", os.getcwd()),
        "SAYSO_URL": h.url,
        "SAYSO_KEY": key,
        "XDG_STATE_HOME": str(h.tmp_path / "state"),
        "XDG_CACHE_HOME": str(h.tmp_path / "cache"),
    }
    env.update(extra)
    return env


@asynccontextmanager
async def proxied_git(
    h: Harness, key: str, repo: Path, *, policy: Path | None = None
) -> AsyncIterator[ClientSession]:
    """`sayso proxy --name git -- python -m mcp_server_git --repository REPO`, and an
    initialized session of the SDK's client with it."""
    extra = {"SAYSO_POLICY": str(policy)} if policy else {}
    command = ["-m", "bot.cli", "proxy", "--name", "git", "--"]
    command += [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]
    params = StdioServerParameters(
        command=sys.executable, args=command, cwd=h.tmp_path, env=proxy_env(h, key, **extra)
    )
    with (h.tmp_path / "proxy-stderr.log").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=120, client_info=CLIENT) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def open_cards(h: Harness, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
    return [m for m in h.sandbox.messages(channel) if has_button(m, "approve")]


async def one_card(h: Harness) -> dict[str, Any]:
    cards = await h.sandbox.wait_for(lambda sb: open_cards(h) or None)
    assert len(cards) == 1, cards
    card: dict[str, Any] = cards[0]
    return card


def proxy_pids() -> list[int]:
    """This test process's `sayso proxy` children."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = stat.rsplit(")", 1)[1].split()[1]
        if parent == me and b"proxy" in cmdline and b"bot.cli" in cmdline:
            found.append(int(entry.name))
    return found
