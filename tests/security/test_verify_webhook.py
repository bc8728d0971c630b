"""Finding 16: `verify_webhook` compares bytes, refuses a non-ASCII signature with its typed
error (never TypeError), and allows at most 60 s of clock skew ahead."""

from __future__ import annotations

import hashlib
import hmac
import time

import pytest

from bot.client import WebhookVerificationError, check_webhook, verify_webhook

SECRET = "whsec_test"


def _signed(body: bytes, at: int) -> dict[str, str]:
    mac = hmac.new(SECRET.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Sayso-Timestamp": str(at), "X-Sayso-Signature": f"v1={mac}"}


def test_a_good_delivery_verifies() -> None:
    headers = _signed(b"{}", int(time.time()))
    assert verify_webhook(SECRET, headers, b"{}")
    check_webhook(SECRET, headers, b"{}")


def test_non_ascii_signatures_are_refused_with_the_typed_error() -> None:
    headers = _signed(b"{}", int(time.time()))
    headers["X-Sayso-Signature"] = "v1=é" + "0" * 63
    assert verify_webhook(SECRET, headers, b"{}") is False
    with pytest.raises(WebhookVerificationError, match="Signature"):
        check_webhook(SECRET, headers, b"{}")
    headers["X-Sayso-Timestamp"] = "١٢٣"  # Arabic-Indic digits: int() would accept them
    assert verify_webhook(SECRET, headers, b"{}") is False


def test_at_most_60_seconds_ahead() -> None:
    now = int(time.time())
    assert verify_webhook(SECRET, _signed(b"{}", now + 30), b"{}")
    assert not verify_webhook(SECRET, _signed(b"{}", now + 120), b"{}")
    with pytest.raises(WebhookVerificationError, match="future"):
        check_webhook(SECRET, _signed(b"{}", now + 120), b"{}")
    assert verify_webhook(SECRET, _signed(b"{}", now - 200), b"{}")
    assert not verify_webhook(SECRET, _signed(b"{}", now - 400), b"{}")
