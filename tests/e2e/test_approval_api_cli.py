"""`sayso request` (exit 0 approved, 1 rejected, 2 expired or cancelled, 3 usage or API error)
and `sayso keys`, run as subprocesses against the real bot."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, has_button
from tests.helpers.views import filled_views


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAYSO_", "DATABASE_"))}
    env.update(extra)
    return env


async def sayso(cwd: Path, *args: str, **env: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        cwd=cwd,
        env=_env(**env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _decide(h: Harness, action: str, used: set[str]) -> None:
    """Decide the newest card not decided before (`used`: the ts of those)."""
    cards = await h.sandbox.wait_for(
        lambda sb: (
            [
                m
                for m in sb.messages("C_GENERAL")
                if has_button(m, "approve") and m["ts"] not in used
            ]
            or None
        ),
        timeout=30,
    )
    used.add(cards[0]["ts"])
    await h.sandbox.click("U_APPROVER", "C_GENERAL", cards[0]["ts"], action)
    if action == "reject":
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "not now"})


async def test_sayso_request_exit_codes(harness: Harness, tmp_path: Path) -> None:
    h = harness
    token, _ = await make_key(h)
    common = ["request", "--channel", "C_GENERAL", "--title", "Deploy v2 to production"]
    common += ["--tool", "deploy", "--arguments", '{"env": "prod"}']
    env = {"SAYSO_URL": h.url, "SAYSO_KEY": token}
    used: set[str] = set()

    approving = asyncio.create_task(sayso(tmp_path, *common, **env))
    await _decide(h, "approve", used)
    code, out, _ = await approving
    assert code == 0 and json.loads(out)["decision"]["arguments"] == {"env": "prod"}

    rejecting = asyncio.create_task(sayso(tmp_path, *common, "--url", h.url, "--key", token))
    await _decide(h, "reject", used)
    code, out, _ = await rejecting
    assert code == 1 and json.loads(out)["decision"]["reason"] == "not now"

    code, out, _ = await sayso(tmp_path, *common, "--wait", "0.5", **env)
    assert code == 2 and json.loads(out)["status"] == "cancelled"
    await h.sandbox.wait_for(
        lambda sb: not [m for m in sb.messages("C_GENERAL") if has_button(m, "approve")]
    )

    code, out, err = await sayso(tmp_path, *common, "--key", "sk_sayso_wrong", "--url", h.url)
    assert code == 3 and out == "" and "unauthorized" in err
    code, _, err = await sayso(tmp_path, "request", "--channel", "C_GENERAL", **env)
    assert code == 3 and "--title" in err
    code, _, err = await sayso(tmp_path, *common[:5], "--arguments", "{nope", **env)
    assert code == 3 and "--arguments" in err


async def test_sayso_request_exits_2_when_the_request_expires(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    token, _ = await make_key(h)
    assert h.bot is not None
    h.bot.service.api.approval_ttl = timedelta(seconds=0.5)  # as SAYSO_APPROVAL_TTL=0.5s would
    code, out, _ = await sayso(
        tmp_path,
        "request",
        "--title",
        "Deploy",
        "--channel",
        "C_GENERAL",
        SAYSO_URL=h.url,
        SAYSO_KEY=token,
    )
    assert code == 2 and json.loads(out)["status"] == "expired"


async def test_sayso_keys_create_list_revoke(tmp_path: Path) -> None:
    db = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}"}
    code, out, _ = await sayso(tmp_path, "keys", "create", "ci", "--channels", "C1,C2", **db)
    assert code == 0
    token = out.split("key:")[1].split()[0]
    secret = out.split("webhook secret:")[1].split()[0]
    assert token.startswith("sk_sayso_") and secret.startswith("whsec_")
    code, _, err = await sayso(tmp_path, "keys", "create", "ci", **db)
    assert code == 1 and "already exists" in err
    code, out, _ = await sayso(tmp_path, "keys", "list", **db)
    assert code == 0 and "ci\tlive\tC1,C2" in out and token not in out and secret not in out
    assert (await sayso(tmp_path, "keys", "revoke", "ci", **db))[0] == 0
    code, out, _ = await sayso(tmp_path, "keys", "list", **db)
    assert "ci\trevoked" in out
    assert (await sayso(tmp_path, "keys", "revoke", "ci", **db))[0] == 1
    raw = (tmp_path / "keys.db").read_bytes()
    assert token.encode() not in raw  # only its hash is stored
