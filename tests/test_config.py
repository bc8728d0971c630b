"""Settings: durations, approvers, URLs; the one place that reads the environment."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.config import ConfigError, Settings, load_settings, parse_duration, require


@pytest.mark.parametrize(
    ("raw", "seconds"), [("90", 90), ("90s", 90), ("30m", 1800), ("24h", 86400), ("7d", 604800)]
)
def test_durations(raw: str, seconds: int) -> None:
    assert parse_duration(raw) == timedelta(seconds=seconds)


def test_approvers_are_split_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAYSO_APPROVERS", "U123, S456 ,W789")
    assert load_settings(_env_file=None).sayso_approvers == ("U123", "S456", "W789")
    monkeypatch.setenv("SAYSO_APPROVERS", "U123,@bob")
    with pytest.raises(ConfigError, match="SAYSO_APPROVERS is malformed"):
        load_settings(_env_file=None)


def test_api_url_gets_a_trailing_slash() -> None:
    s = Settings(_env_file=None, slack_api_url="http://127.0.0.1:9/api")  # type: ignore[call-arg]
    assert s.slack_api_url == "http://127.0.0.1:9/api/"


def test_require_per_mode() -> None:
    s = Settings(_env_file=None, slack_bot_token="xoxb-1")  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        require(s, "http")
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN"):
        require(s, "socket")
    s = Settings(_env_file=None, slack_bot_token="xoxb-1", slack_app_token="xapp-1")  # type: ignore[call-arg]
    require(s, "socket")


def test_secrets_are_hidden_in_repr() -> None:
    s = Settings(_env_file=None, slack_bot_token="xoxb-secret")  # type: ignore[call-arg]
    assert "xoxb-secret" not in repr(s)
