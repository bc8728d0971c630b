"""`bot.agent.scrub`: what counts as a secret; log records scrubbed whatever handler writes."""

from __future__ import annotations

import logging

import pytest

from bot.agent.scrub import Failure, install_log_scrubbing, scrub


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GET https://api.example.com/v1?city=Oslo&api_key=abc123def", "abc123def"),
        ("https://x.example/y?access_token=tok-999&page=2", "tok-999"),
        ("https://x.example/y?X-Amz-Signature=deadbeef01", "deadbeef01"),
        ("https://x.example/?client_secret=s3cr3t", "s3cr3t"),
        ("https://x.example/?password=pw-1", "pw-1"),
        ("https://x.example/?auth=a-1b", "a-1b"),
        ("Model request to http://admin:hunter2@10.0.0.1:8000/v1 failed", "hunter2"),
        ("postgresql+asyncpg://sayso:pg-pass@db/sayso", "pg-pass"),
        ("the bot token xoxb-1234-5678-abcdef leaked", "1234-5678-abcdef"),
        ("a user token xoxp-99-88-ff and xoxa-1-2", "99-88-ff"),
        ("app token xapp-1-A012-345-abc", "A012-345-abc"),
        ("Incorrect API key provided: sk-live-0123456789abcdef.", "0123456789abcdef"),
        ('{"error": "bad key sk-proj-AbC_dEf-123"}', "AbC_dEf-123"),
        ("Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig", "eyJhbGciOi"),
        ('{"api_key": "k-42-k"}', "k-42-k"),
    ],
)
def test_secrets_are_removed(text: str, secret: str) -> None:
    assert secret not in scrub(text)
    assert "***" in scrub(text)


def test_ordinary_text_is_left_alone() -> None:
    text = "event=tool_failed run_id=abc tool=deploy error=HTTP 503 at https://api.example.com/x"
    assert scrub(text) == text
    assert scrub("task-force ask-me") == "task-force ask-me"


def test_a_failure_shows_type_scrubbed_text_and_an_error_id() -> None:
    failure = Failure.of(RuntimeError("GET https://h/x?token=t0p-s3cret failed"))
    assert failure.error_type == "RuntimeError" and len(failure.error_id) == 8
    assert "t0p-s3cret" not in failure.shown
    assert failure.shown.startswith("RuntimeError: GET https://h/x?token=***")
    assert failure.shown.endswith(f"(error id {failure.error_id})")


def test_log_records_are_scrubbed_message_and_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    install_log_scrubbing()
    log = logging.getLogger("sayso.test")
    try:
        raise ValueError("connect to https://u:tr4ceback-pw@h failed")
    except ValueError:
        log.exception("event=boom url=%s", "https://h/?api_key=arg-s3cret")
    assert "arg-s3cret" not in caplog.text and "tr4ceback-pw" not in caplog.text
    assert "event=boom" in caplog.text and "ValueError" in caplog.text
