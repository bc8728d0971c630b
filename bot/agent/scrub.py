"""Secrets out of text bound for Slack, the model and the logs.

`scrub(text)` removes what looks like a credential: URL userinfo (`https://user:pass@host`),
the values of query parameters (and `name=value` or JSON pairs) whose names contain key,
token, secret, password, auth or signature, Slack tokens (`xoxb-…`, `xapp-…`), sayso's API keys
(`sk_sayso_…`) and webhook secrets (`whsec_…`), `sk-…` API
keys and `Bearer …` / `Basic …` credentials.

`Failure.of(exc)` is how an exception is shown to people: its type, its scrubbed text and a
short error id that the log line carries too. A `ToolError` is shown as written.
`install_log_scrubbing()` makes every log record go through `scrub` (message and traceback).
"""

from __future__ import annotations

import logging
import re
import secrets
import traceback
from dataclasses import dataclass
from typing import Any, Final

from bot.agent.errors import ToolError

REDACTED: Final = "***"

_SECRET_NAME = r"[\w.\-]*(?:key|token|secret|passw(?:or)?d|auth|signature)[\w.\-]*"

_PATTERNS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]+"), rf"\1 {REDACTED}"),
    # scheme://user:password@host -> scheme://***@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@\"'<>]+@"), rf"\1{REDACTED}@"),
    # ?api_key=… &token=… and name=value pairs in text
    (
        re.compile(
            rf"(?i)((?:^|[?&;\s,(\[{{])\"?{_SECRET_NAME}\"?\s*[=:]\s*\"?)[^\s&#\"',;)\]}}]+"
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"\bxox[abporse]-[A-Za-z0-9\-]+"), f"xox-{REDACTED}"),
    (re.compile(r"\bxapp-[A-Za-z0-9\-]+"), f"xapp-{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{4,}"), f"sk-{REDACTED}"),
    # sayso's own: approval API keys and webhook secrets (bot/service/api_requests.py)
    (re.compile(r"\bsk_sayso_[A-Za-z0-9_\-]{4,}"), f"sk_sayso_{REDACTED}"),
    (re.compile(r"\bwhsec_[A-Za-z0-9_\-]{4,}"), f"whsec_{REDACTED}"),
)


def scrub(text: str) -> str:
    """`text` with everything shaped like a credential replaced by ***."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def new_error_id() -> str:
    """A short id (8 hex characters) naming one failure in Slack and in the log line."""
    return secrets.token_hex(4)


@dataclass(frozen=True)
class Failure:
    """An exception as people see it: its type, its text (scrubbed) and an error id."""

    error_id: str
    error_type: str
    text: str
    written_by_tool: bool = False

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        if isinstance(exc, ToolError):
            return cls(new_error_id(), type(exc).__name__, str(exc), written_by_tool=True)
        return cls(new_error_id(), type(exc).__name__, scrub(str(exc)).strip())

    @property
    def message(self) -> str:
        """`Type: text`, or a ToolError's message as written (what the model reads)."""
        if self.written_by_tool:
            return self.text or self.error_type
        return f"{self.error_type}: {self.text}" if self.text else self.error_type

    @property
    def shown(self) -> str:
        """What people see: the message and the error id of the log line."""
        return f"{self.message} (error id {self.error_id})"


# -- logs -------------------------------------------------------------------------------------


def scrub_record(record: logging.LogRecord) -> None:
    """Scrub a log record in place: its message (arguments merged) and its traceback."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed call: keep what there is, scrubbed
        message = f"{record.msg} {record.args!r}"
    record.msg, record.args = scrub(message), None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        lines = traceback.format_exception(*record.exc_info)
        record.exc_text = scrub("".join(lines).rstrip("\n"))
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)


_MARK: Final = "_sayso_scrubs"


def install_log_scrubbing() -> None:
    """Scrub every log record as it is made, whatever handler writes it (idempotent)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, _MARK, False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        scrub_record(record)
        return record

    setattr(factory, _MARK, True)
    logging.setLogRecordFactory(factory)
