"""Finding 3: caller values shaped like sayso's encryption envelope are stored as data; one
unreadable row fails alone and never stops a sweep or a re-encryption."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from store import crypto
from store.rekey import reencrypt
from store.schema import approval_requests
from tests.e2e.api_flows import create, http, make_key
from tests.e2e.harness import Harness
from tests.helpers.waiting import eventually


async def test_imitations_are_data_and_sweeps_go_on(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    fake_json = {"$sayso_enc": "x"}
    r = await create(h, token, tool="deploy", arguments=fake_json)
    assert r.status_code == 201, r.text
    first = r.json()["id"]
    # a cancel reason shaped like an encrypted text
    r = await create(h, token, tool="deploy")
    second = r.json()["id"]
    async with http(h, token) as client:
        c = await client.post(f"/v1/requests/{second}/cancel", json={"reason": "sayso-enc:v1:z"})
        assert c.status_code == 200, c.text
        got = await client.get(f"/v1/requests/{second}")
        assert got.status_code == 200 and got.json()["status"] == "cancelled"
        assert (await client.get(f"/v1/requests/{first}")).status_code == 200
    assert h.bot is not None
    stored = await h.bot.store.requests.get(first)
    assert stored is not None and stored.spec.arguments == fake_json
    cancelled = await h.bot.store.requests.get(second)
    assert cancelled is not None and cancelled.state.reason == "sayso-enc:v1:z"
    # the sweeper still expires requests
    r = await create(h, token, tool="deploy", expires_in=0.5)
    third = r.json()["id"]

    async def expired() -> bool:
        async with http(h, token) as client:
            return (await client.get(f"/v1/requests/{third}")).json()["status"] == "expired"

    await eventually(expired, timeout=15, what="the sweep to expire the request")


async def test_one_unreadable_row_fails_alone(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """A row sayso cannot read (written with a key since lost) is logged and skipped: the
    sweep expires the others, and `sayso db reencrypt` rewrites everything else."""
    h = harness
    token, _ = await make_key(h)
    lost = crypto.Cipher([Fernet.generate_key().decode()])
    bad = (await create(h, token, tool="deploy", expires_in=0.5)).json()["id"]
    assert h.bot is not None
    async with h.bot.store.db.write() as conn:
        await conn.execute(
            approval_requests.update()
            .where(approval_requests.c.id == bad)
            .values(arguments=sa.literal({crypto.JSON_KEY: lost.encrypt("{}")}, sa.JSON()))
        )
    good = (await create(h, token, tool="deploy", expires_in=0.5)).json()["id"]

    async def expired() -> bool:
        async with http(h, token) as client:
            return (await client.get(f"/v1/requests/{good}")).json()["status"] == "expired"

    await eventually(expired, timeout=15, what="the sweep to expire the readable request")
    await h.stop_bot()
    h.settings_overrides["sayso_encryption_keys"] = Fernet.generate_key().decode()
    await h.start_bot()
    with caplog.at_level(logging.WARNING):
        changed = await reencrypt(h.bot.store.db, batch=2)
    assert changed > 0
    assert "unreadable" in caplog.text
