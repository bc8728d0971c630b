"""`SAYSO_LOG_FORMAT=json`: every log line one JSON object, libraries' lines too.

A line is `{"time", "level", "logger", "event", ...}` plus the `key=value` pairs of today's
text lines as keys (`run_id`, `call_id`, `request_id`, ...), and `trace_id` / `span_id` when
an OpenTelemetry span is current. A line without `event=` (a library's) has its message as
`event`. Messages and tracebacks are scrubbed of secrets before they get here
(`install_log_scrubbing`), so the JSON carries no more than the text lines did.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z_][A-Za-z0-9_.]*)=")
RESERVED = frozenset({"time", "level", "logger"})


def parse_pairs(message: str) -> tuple[str, dict[str, str]]:
    """`"event=x run_id=r1 error=a b"` -> ("", {"event": "x", "run_id": "r1", "error": "a b"}):
    a value runs up to the next ` key=`; text before the first key is returned as is."""
    matches = list(_KEY.finditer(message))
    if not matches:
        return message, {}
    lead = message[: matches[0].start()].strip()
    pairs: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(message)
        value = message[match.end() : end].strip()
        key = match.group(1)
        if key in RESERVED:
            key = f"{key}_"
        pairs.setdefault(key, value)
    return lead, pairs


def _event_and_note(pairs: dict[str, str]) -> None:
    """`event=renamed_setting: SAYSO_...` -> event `renamed_setting`, message `SAYSO_...`."""
    event = pairs.get("event", "")
    name, sep, rest = event.partition(":")
    if sep and name and " " not in name:
        pairs["event"] = name
        pairs.setdefault("message", rest.strip())


def _trace_ids() -> dict[str, str]:
    trace = sys.modules.get("opentelemetry.trace")  # never imported from here
    if trace is None:
        return {}
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module's docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        lead, pairs = parse_pairs(message)
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if "event" in pairs:
            _event_and_note(pairs)
            if lead:
                pairs.setdefault("message", lead)
        else:
            pairs = {"event": message} if not pairs or lead else {"event": lead, **pairs}
            if not pairs["event"]:
                pairs["event"] = message
        out.update(pairs)
        out.update(_trace_ids())
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = record.stack_info
        return json.dumps(out, ensure_ascii=False, default=str)


def log_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """sys.excepthook: an uncaught exception is a JSON line too."""
    logging.getLogger("sayso").critical("event=uncaught_exception", exc_info=(kind, value, tb))


def use_json_logs(level: str) -> None:
    """Every record on stderr as one JSON line: the root handler's formatter, warnings and
    uncaught exceptions go through logging too."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)
    sys.excepthook = log_uncaught
