"""Sensitive tool parameters: `Annotated[str, Sensitive()]` keeps a value off people's screens.

The tool body receives the real value. Cards, modals, logs, `sayso runs show` and the audit
show it masked: `••••` followed by at most its last 4 characters (fewer for short values, none
below 8 characters)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

MASK = "••••"


@dataclass(frozen=True)
class Sensitive:
    """Marks a tool parameter as sensitive: `token: Annotated[str, Sensitive()]`."""


def sensitive_parameters(fn: Any) -> frozenset[str]:
    """The parameters of `fn` annotated with `Sensitive()`."""
    hints = get_type_hints(fn, include_extras=True)
    return frozenset(
        name
        for name, hint in hints.items()
        if any(isinstance(m, Sensitive) for m in getattr(hint, "__metadata__", ()))
    )


def mask(value: Any) -> str:
    """`••••` plus at most the last 4 characters (a quarter of the value at most)."""
    text = value if isinstance(value, str) else str(value)
    shown = min(4, len(text) // 4) if len(text) >= 8 else 0
    return MASK + (text[-shown:] if shown else "")


def mask_arguments(arguments: Any, names: Iterable[str]) -> Any:
    """A copy of the arguments with the sensitive ones masked (anything else unchanged)."""
    names = frozenset(names)
    if not names or not isinstance(arguments, Mapping):
        return arguments
    return {k: mask(v) if k in names and v is not None else v for k, v in arguments.items()}


def redact(text: str, arguments: Any, names: Iterable[str]) -> str:
    """`text` with every sensitive argument's value replaced by its mask (for error messages
    and logs, which may quote what a tool was given)."""
    if not isinstance(arguments, Mapping):
        return text
    for name in frozenset(names):
        value = arguments.get(name)
        if value is None:
            continue
        raw = value if isinstance(value, str) else str(value)
        if len(raw) >= 3:
            text = text.replace(raw, mask(raw))
    return text
