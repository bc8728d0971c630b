"""SAYSO_RATE_LIMIT: its forms, and what a person over it is told."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.agent.util import utcnow
from bot.compose import rate_limit
from bot.config import ConfigError, load_settings
from bot.service.start_gate import RateLimit


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10/minute", RateLimit(10, "minute")),
        (" 3 / second ", RateLimit(3, "second")),
        ("100/HOUR", RateLimit(100, "hour")),
        ("off", None),
    ],
)
def test_forms(value: str, expected: RateLimit | None) -> None:
    assert rate_limit(load_settings(_env_file=None, sayso_rate_limit=value)) == expected


def test_the_default_is_ten_a_minute() -> None:
    assert rate_limit(load_settings(_env_file=None)) == RateLimit(10, "minute")


@pytest.mark.parametrize("value", ["10", "10/day", "0/minute", "ten/minute", "-1/hour"])
def test_malformed_rates_are_refused_in_one_line(value: str) -> None:
    with pytest.raises(ConfigError, match=r"SAYSO_RATE_LIMIT is malformed: .*N/minute"):
        load_settings(_env_file=None, sayso_rate_limit=value)


def test_the_refusal_says_when_to_try_again() -> None:
    now = utcnow()
    starts = [now - timedelta(seconds=50 - i) for i in range(10)]
    said = RateLimit(10, "minute").refusal(starts, now)
    assert said == (
        "You have started 10 runs in the last minute (the limit is 10/minute): "
        "try again in 10 seconds."
    )
    hourly = RateLimit(2, "hour").refusal([now - timedelta(minutes=5)] * 2, now)
    assert hourly.endswith("try again in 55 minutes.")
