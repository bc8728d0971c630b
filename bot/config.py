"""The one place that reads configuration: environment variables and an optional `.env` file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.agent.util import parse_duration

if TYPE_CHECKING:
    from bot.receipts import ReceiptSigner

__all__ = ["ConfigError", "Settings", "load_settings", "parse_duration", "require"]

_PRINCIPAL = re.compile(r"^[UWS][A-Z0-9_]+$")


_RATE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour)\s*$", re.IGNORECASE)


def parse_rate_limit(value: object) -> tuple[int, str] | None:
    """`10/minute` -> (10, "minute"); `off` -> None (no limit). Windows: second, minute, hour."""
    text = str(value).strip().lower()
    if text in ("off", "none", "0"):
        return None
    match = _RATE.match(text)
    if not match or int(match.group(1)) < 1:
        raise ValueError(
            f"{value!r} is not a rate: use N/second, N/minute or N/hour (N ≥ 1), or off"
        )
    return int(match.group(1)), match.group(2)


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
    # issue 13: workers (runs driven off the ack loop), graceful shutdown
    sayso_worker_concurrency: int | None = Field(default=None, ge=1)
    sayso_max_active_runs: int | None = Field(default=None, ge=1)
    """The old name of SAYSO_WORKER_CONCURRENCY (same meaning: runs in flight per worker)."""
    sayso_shutdown_grace: float = Field(default=20.0, ge=0)
    sayso_replica_id: str | None = None
    sayso_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # issue 11 (limits): runs each person may start (commands, mentions, follow-ups, retries)
    sayso_rate_limit: str = "10/minute"
    # issue 14, the approval API: where requests without a channel (nor a key channel) go
    sayso_default_channel: str | None = None
    # webhooks go only to these hosts (bot/api/callbacks.py); empty: any http(s) host
    sayso_callback_hosts: Annotated[tuple[str, ...], NoDecode] = ()
    # issue 23, operations: the audit trail streamed to a SIEM, signed like the API's webhooks;
    # how long audit events are kept (unset: forever); JSON log lines
    sayso_audit_webhook: str | None = None
    sayso_audit_webhook_secret: SecretStr | None = None
    sayso_audit_retention: timedelta | None = None
    sayso_log_format: Literal["text", "json"] = "text"
    # the event loop: uvloop where installed (bot/event_loop.py)
    sayso_event_loop: Literal["auto", "uvloop", "asyncio"] = "auto"
    # traces (`sayso[otel]`): on when an OTLP endpoint is set; the exporter reads the other
    # standard OTEL_* variables itself
    otel_exporter_otlp_endpoint: str | None = None
    otel_exporter_otlp_traces_endpoint: str | None = None
    sayso_url: str | None = None  # `sayso request`: the sayso to ask (--url)
    sayso_key: SecretStr | None = None  # `sayso request`: the API key (--key)

    @field_validator("sayso_callback_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> tuple[str, ...]:
        if value is None or value == "":
            return ()
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, Iterable):
            raise ValueError("callback hosts are a comma-separated string or a list")
        hosts = tuple(str(i).strip() for i in items if str(i).strip())
        bad = [h for h in hosts if "/" in h or " " in h]
        if bad:
            raise ValueError(f"callback hosts are host[:port] or *.domain, not {bad[0]!r}")
        return hosts

    @field_validator("sayso_audit_webhook")
    @classmethod
    def _audit_webhook(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        assert value is not None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL such as https://siem.example.com/sayso")
        return value

    @field_validator("sayso_audit_retention", mode="before")
    @classmethod
    def _audit_retention(cls, value: object) -> timedelta | None:
        if value is None or str(value).strip().lower() in ("", "off", "forever", "never"):
            return None
        return parse_duration(value)

    @model_validator(mode="after")
    def _audit_webhook_signed(self) -> Settings:
        if self.sayso_audit_webhook and not self.secret("sayso_audit_webhook_secret"):
            raise ValueError(
                "SAYSO_AUDIT_WEBHOOK is set but SAYSO_AUDIT_WEBHOOK_SECRET is not: the audit "
                "webhook is always signed, set a secret the receiver checks"
            )
        return self

    @field_validator("sayso_rate_limit", mode="before")
    @classmethod
    def _rate_limit(cls, value: object) -> str:
        rate = parse_rate_limit(value)
        return "off" if rate is None else f"{rate[0]}/{rate[1]}"

    # issue 11 (kill switch, data at rest): who may cancel or retry any run; the Fernet keys
    # that encrypt stored runs and requests (the first encrypts, all decrypt)
    sayso_admins: Annotated[tuple[str, ...], NoDecode] = ()
    sayso_encryption_keys: SecretStr | None = None

    @field_validator("sayso_admins", mode="before")
    @classmethod
    def _split_admins(cls, value: object) -> tuple[str, ...]:
        return cls._split_approvers(value)

    @field_validator("sayso_encryption_keys")
    @classmethod
    def _fernet_keys(cls, value: SecretStr | None) -> SecretStr | None:
        from cryptography.fernet import Fernet

        keys = [k.strip() for k in (value.get_secret_value() if value else "").split(",")]
        for i, key in enumerate(k for k in keys if k):
            try:
                Fernet(key.encode())
            except (ValueError, TypeError):
                raise ValueError(
                    f"key {i + 1} is not a Fernet key (32 url-safe base64 bytes: make one with "
                    "cryptography.fernet.Fernet.generate_key())"
                ) from None
        return value

    def encryption_keys(self) -> tuple[str, ...]:
        """SAYSO_ENCRYPTION_KEYS as a list (empty: nothing is encrypted)."""
        raw = self.secret("sayso_encryption_keys") or ""
        return tuple(k.strip() for k in raw.split(",") if k.strip())

    # issue 12, approval policies: a YAML policy file overriding the code's settings
    sayso_policy: str | None = None

    # issue 24, signed receipts: the Ed25519 key that signs every decision's receipt
    # (`sayso keys signing-key` makes one), and how long an approval's receipt lets a call run
    sayso_signing_key: SecretStr | None = None
    sayso_receipt_ttl: timedelta = timedelta(hours=1)

    @field_validator("sayso_signing_key")
    @classmethod
    def _signing_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and value.get_secret_value().strip():
            from bot.receipts import ReceiptSigner

            ReceiptSigner.from_text(value.get_secret_value())  # ValueError says how to fix it
        return value

    def receipt_signer(self) -> ReceiptSigner | None:
        """The signer of receipts, when SAYSO_SIGNING_KEY is set."""
        from bot.receipts import ReceiptSigner

        text = (self.secret("sayso_signing_key") or "").strip()
        return ReceiptSigner.from_text(text, self.sayso_receipt_ttl) if text else None

    @field_validator("sayso_approvers", "sayso_admins", mode="before")
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

    @field_validator("sayso_approval_ttl", "sayso_retention", "sayso_receipt_ttl", mode="before")
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

    @property
    def worker_concurrency(self) -> int:
        """Runs in flight per worker: SAYSO_WORKER_CONCURRENCY, else SAYSO_MAX_ACTIVE_RUNS."""
        return self.sayso_worker_concurrency or self.sayso_max_active_runs or 200

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
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if not err.get("loc"):  # a rule across settings: its message names them
            raise ConfigError(f"{msg}. Fix it in the environment or .env") from None
        field = str(err["loc"][0]).upper()
        raise ConfigError(
            f"{field} is malformed: {msg}. Fix it in the environment or .env"
        ) from None


def require_bot_token(settings: Settings) -> None:
    """What a worker needs: the bot token (it posts in Slack, it answers no requests)."""
    if settings.slack_bot_token is None:
        raise ConfigError(
            f"SLACK_BOT_TOKEN is not set (a worker needs it): set it to "
            f"{_HINTS['slack_bot_token']}, in the environment or in .env"
        )
    if not (settings.secret("slack_bot_token") or "").startswith("xoxb-"):
        raise ConfigError("SLACK_BOT_TOKEN is malformed: a bot token starts with xoxb-")


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
