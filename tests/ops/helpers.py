"""Running the real `sayso` command line against a test's database."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli_env(db_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAYSO_", "SLACK_"))}
    env.update(DATABASE_URL=db_url, PYTHONPATH=str(ROOT), **extra)
    return env


async def sayso(db_url: str, *args: str, **extra: str) -> tuple[int, str, str]:
    """Run `python -m bot.cli ARGS` in a subprocess: (exit status, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        env=cli_env(db_url, **extra),
        cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
