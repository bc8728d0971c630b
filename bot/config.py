"""The one place that reads configuration: environment variables and an optional `.env` file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_PRINCIPAL = re.compile(r"^[UWS][A-Z0-9_]+$")


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `30m`, `24h`, `7d` -> timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=float(value))
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration: use seconds or a number with s, m, h or d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", case_sensitive=False)

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    database_url: str = "sqlite+aiosqlite:///sayso.db"
    sayso_agents: str = "bot.examples.ops:agents"
    sayso_approvers: Annotated[tuple[str, ...], NoDecode] = ()
    sayso_approval_ttl: timedelta = timedelta(hours=24)
    sayso_remind_after: timedelta | None = None
    sayso_retention: timedelta = timedelta(days=30)
    sayso_lease_seconds: float = Field(default=30.0, gt=0)
    sayso_sweep_interval: float = Field(default=10.0, gt=0)
    sayso_max_active_runs: int = Field(default=8, ge=1)
    sayso_replica_id: str | None = None
    sayso_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # issue 14, the approval API: where requests without a channel (nor a key channel) go
    sayso_default_channel: str | None = None
    sayso_url: str | None = None  # `sayso request`: the sayso to ask (--url)
    sayso_key: SecretStr | None = None  # `sayso request`: the API key (--key)

    @field_validator("sayso_approvers", mode="before")
    @classmethod
    def _split_approvers(cls, value: object) -> tuple[str, ...]:
        if value is None or value == "":
            return ()
        if isinstance(value, str):
            items: Iterable[object] = value.split(",")
        elif isinstance(value, Iterable):
            items = value
        else:
            raise ValueError("approvers are a comma-separated string or a list of ids")
        ids = tuple(str(i).strip() for i in items if str(i).strip())
        bad = [i for i in ids if not _PRINCIPAL.match(i)]
        if bad:
            raise ValueError(
                f"{', '.join(bad)}: approvers are Slack user ids (U…, W…) or user group ids (S…), "
                "comma-separated"
            )
        return ids

    @field_validator("sayso_approval_ttl", "sayso_retention", mode="before")
    @classmethod
    def _duration(cls, value: object) -> timedelta:
        return parse_duration(value)

    @field_validator("sayso_remind_after", mode="before")
    @classmethod
    def _optional_duration(cls, value: object) -> timedelta | None:
        return None if value in (None, "") else parse_duration(value)

    @field_validator("slack_api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL such as https://slack.com/api/")
        return value if value.endswith("/") else value + "/"

    def secret(self, name: str) -> str | None:
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else None


class ConfigError(Exception):
    """A setting is missing or malformed: the message is one line saying which and how to fix it."""


_HINTS = {
    "slack_bot_token": "the Bot User OAuth Token (xoxb-…) from your app's OAuth & Permissions page",
    "slack_signing_secret": "the Signing Secret from your app's Basic Information page",
    "slack_app_token": "an app-level token (xapp-…) with connections:write, from Basic Information",
}


def load_settings(**overrides: object) -> Settings:
    """Read settings; raise ConfigError with one clear line on a malformed value."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]).upper() if err.get("loc") else "a setting"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        raise ConfigError(
            f"{field} is malformed: {msg}. Fix it in the environment or .env"
        ) from None


def require(settings: Settings, mode: str) -> None:
    """Check what a mode needs before anything starts."""
    needed = ["slack_bot_token"]
    needed += ["slack_app_token"] if mode == "socket" else ["slack_signing_secret"]
    for name in needed:
        if getattr(settings, name) is None:
            raise ConfigError(
                f"{name.upper()} is not set ({mode} mode needs it): set it to {_HINTS[name]}, "
                "in the environment or in .env"
            )
    token = settings.secret("slack_bot_token") or ""
    if not token.startswith("xoxb-"):
        raise ConfigError("SLACK_BOT_TOKEN is malformed: a bot token starts with xoxb-")
    if mode == "socket" and not (settings.secret("slack_app_token") or "").startswith("xapp-"):
        raise ConfigError("SLACK_APP_TOKEN is malformed: an app-level token starts with xapp-")
