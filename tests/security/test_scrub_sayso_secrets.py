"""Finding 17: sayso's own secrets (API keys `sk_sayso_…`, webhook secrets `whsec_…`) are
scrubbed from logs and error text like Slack tokens are."""

from __future__ import annotations

import logging

import pytest

from bot.agent.scrub import Failure, install_log_scrubbing, scrub
from bot.service.api_requests import new_key_secrets


def test_api_keys_and_webhook_secrets_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    token, secret = new_key_secrets()
    assert token.startswith("sk_sayso_") and secret.startswith("whsec_")
    text = f"calling with {token} then signing with {secret}."
    assert token not in scrub(text) and secret not in scrub(text)
    assert scrub(text).endswith(".")
    install_log_scrubbing()
    with caplog.at_level(logging.INFO):
        logging.getLogger("sayso.test").info("event=x key=%s secret %s", token, secret)
    assert token not in caplog.text and secret not in caplog.text
    failure = Failure.of(RuntimeError(f"bad {token}"))
    assert token not in failure.shown
