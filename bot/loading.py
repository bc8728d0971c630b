"""Loading the agents `SAYSO_AGENTS` names (`package.module:attribute`): sayso agents, and
framework agents taken as they are (`bot.adapters.as_agent`: the frameworks load only when
named)."""

from __future__ import annotations

import importlib

from bot.service.registry import AgentRegistry


def load_registry(spec: str) -> AgentRegistry:
    """Import `package.module:attribute`; raise ValueError with a fix on failure."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{spec!r} must look like package.module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} ({exc})") from None
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    from bot.adapters import as_agent

    values = list(value) if isinstance(value, list | tuple) else [value]
    try:
        return AgentRegistry([as_agent(v) for v in values])
    except TypeError as exc:
        raise ValueError(f"{spec}: {exc}") from None
