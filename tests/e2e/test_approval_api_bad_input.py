"""Each kind of bad input to the approval API gets its status and a JSON error naming the
field, and leaves nothing behind."""

from __future__ import annotations

from typing import Any

from store import api as api_ops
from tests.e2e.api_flows import create, http, make_key
from tests.e2e.harness import Harness

SCHEMA = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}


def error_of(response: Any) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return dict(body["error"])


async def _runs(h: Harness) -> int:
    assert h.bot is not None
    return len(await h.bot.store.runs.list())


async def test_keys_are_required_and_checked(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    async with http(h, None) as client:
        missing = await client.post("/v1/requests", json={"title": "x"})
        assert missing.status_code == 401 and error_of(missing)["code"] == "unauthorized"
        assert (await client.get("/v1/requests/abc")).status_code == 401
    assert (await create(h, "sk_sayso_not-a-key", tool="deploy")).status_code == 401
    assert h.bot is not None
    assert await api_ops.revoke_key(h.bot.store.db, "ci")
    assert (await create(h, token, tool="deploy")).status_code == 401
    assert await _runs(h) == 0


async def test_a_key_limited_to_channels(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h, "ops", channels=["C_OPS"])
    r = await create(h, token, channel="C_GENERAL")
    assert r.status_code == 403 and "channel" in error_of(r)["message"]
    assert await _runs(h) == 0


async def test_unknown_requests_are_404_even_another_keys(harness: Harness) -> None:
    h = harness
    mine, _ = await make_key(h, "mine")
    theirs, _ = await make_key(h, "theirs")
    created = (await create(h, mine, tool="deploy")).json()
    async with http(h, theirs) as client:
        for path in (f"/v1/requests/{created['id']}", "/v1/requests/nope"):
            r = await client.get(path)
            assert r.status_code == 404 and error_of(r)["code"] == "not_found"
        r = await client.post(f"/v1/requests/{created['id']}/cancel")
        assert r.status_code == 404


async def test_bodies_over_1_mb_are_413(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    r = await create(h, token, tool="deploy", arguments={"blob": "x" * (1024 * 1024 + 10)})
    assert r.status_code == 413 and "1 MB" in error_of(r)["message"]
    assert await _runs(h) == 0


async def test_invalid_input_is_422_naming_the_field(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    async with http(h, token) as client:
        r = await client.post("/v1/requests", content=b"{not json")
        assert r.status_code == 422 and error_of(r)["message"].startswith("body")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"colour": "red"}, "colour"),  # unknown field
        ({"kind": "poll"}, "kind"),
        ({"title": ""}, "title"),
        ({"expires_in": -1}, "expires_in"),
        ({"schema": {"type": "nonsense"}}, "schema"),
        ({"schema": SCHEMA, "arguments": {"env": 3}}, "arguments.env"),
        ({"schema": SCHEMA, "arguments": {}}, "arguments.env"),
        ({"callback_url": "ftp://x"}, "callback_url"),
        ({"kind": "question", "min_approvals": 2}, "min_approvals"),
    ]
    for body, field in cases:
        r = await create(h, token, tool="deploy", **body)
        assert r.status_code == 422, (body, r.text)
        assert field in error_of(r)["message"], (field, r.text)
    async with http(h, token) as client:
        r = await client.get("/v1/requests/x?wait=61")
        assert r.status_code == 422 and "wait" in error_of(r)["message"]
    assert await _runs(h) == 0


async def test_no_channel_anywhere_is_422(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h, channels=[])  # and SAYSO_DEFAULT_CHANNEL is not set
    r = await create(h, token, tool="deploy", channel=None)
    assert r.status_code == 422 and "channel" in error_of(r)["message"]


async def test_slack_refusing_the_card_is_422_with_its_code_and_leaves_nothing(
    harness: Harness,
) -> None:
    h = harness
    token, _ = await make_key(h, channels=["#nowhere"])
    r = await create(h, token, tool="deploy", channel="#nowhere", idempotency_key="k1")
    assert r.status_code == 422 and error_of(r)["code"] == "channel_not_found"
    assert await _runs(h) == 0
    assert h.bot is not None
    assert await api_ops.by_idempotency_key(h.bot.store.db, "ci", "k1") is None
