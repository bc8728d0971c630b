"""Finding 11: with SAYSO_CALLBACK_HOSTS unset, webhooks never reach loopback, link-local,
private or unique-local addresses (checked on the resolved address, which the connection then
uses); an explicit allowlist entry can still name such a host."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest

from tests.e2e.api_flows import create, make_key
from tests.e2e.harness import Harness
from tests.e2e.test_approval_api_webhooks import Receiver, receiver  # noqa: F401 - fixture

PRIVATE = (
    "http://127.0.0.1:{port}/hook",
    "http://10.1.2.3/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:{port}/hook",
    "http://[fd00::1]/hook",
    "http://[::ffff:127.0.0.1]:{port}/hook",
    "http://0.0.0.0:{port}/hook",
)


async def test_private_addresses_are_refused_by_default(
    harness: Harness,
    receiver: Receiver,  # noqa: F811
) -> None:
    h = harness
    token, _ = await make_key(h)
    for url in PRIVATE:
        r = await create(h, token, tool="deploy", callback_url=url.format(port=receiver.port))
        assert r.status_code == 422, (url, r.text)
        assert "callback_url" in r.json()["error"]["message"]
    r = await create(h, token, tool="deploy", callback_url=receiver.url_at("localhost"))
    assert r.status_code == 422, r.text
    # a name that resolves to a private address is accepted, then refused on its address
    name = socket.gethostname()
    address = socket.getaddrinfo(name, None)[0][4][0]
    if ipaddress.ip_address(address).is_global:
        pytest.skip(f"this machine's name resolves to a public address ({address})")
    by_name = receiver.url_at(name)
    created = await create(h, token, tool="deploy", callback_url=by_name)
    assert created.status_code == 201, created.text
    await h.sandbox.click("U_APPROVER", "C_GENERAL", created.json()["message_ts"], "approve")
    await asyncio.sleep(2)
    assert receiver.received == []


async def test_an_allowlist_entry_may_name_a_private_host(
    harness: Harness,
    receiver: Receiver,  # noqa: F811
) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_callback_hosts": "localhost"}
    await h.start_bot()
    token, _ = await make_key(h)
    r = await create(h, token, tool="deploy", callback_url=f"http://localhost:{receiver.port}/h")
    assert r.status_code == 201, r.text
    refused = await create(
        h, token, tool="deploy", callback_url=f"http://127.0.0.1:{receiver.port}/hook"
    )
    assert refused.status_code == 422
    await h.sandbox.click("U_APPROVER", "C_GENERAL", r.json()["message_ts"], "approve")
    await h.sandbox.wait_for(lambda sb: receiver.received, timeout=5)
