"""Model providers, chosen by `provider:model` strings."""

from __future__ import annotations

from bot.agent.models.anthropic import AnthropicModel
from bot.agent.models.base import (
    FinalResponse,
    Model,
    ModelSettings,
    StreamEvent,
    StreamingModel,
    TextDelta,
    ToolSpec,
    respond,
)
from bot.agent.models.config import ProviderSettings
from bot.agent.models.history import EmptyPromptError
from bot.agent.models.openai import OpenAIChatModel
from bot.agent.models.scripted import ScriptedModel, call, register_script


def resolve_model(spec: str | Model, settings: ProviderSettings | None = None) -> Model:
    """Turn `openai:gpt-4o-mini`, `anthropic:claude-...` or `scripted:name` into a model."""
    if not isinstance(spec, str):
        return spec
    provider, sep, name = spec.partition(":")
    if not sep or not name:
        raise ValueError(
            f"Model {spec!r} must look like provider:model (openai, anthropic, scripted)"
        )
    if provider == "scripted":
        return ScriptedModel(name)
    settings = settings or ProviderSettings()
    if provider == "openai":
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        return OpenAIChatModel(name, base_url=settings.openai_base_url, api_key=key)
    if provider == "anthropic":
        key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
        return AnthropicModel(name, base_url=settings.anthropic_base_url, api_key=key)
    raise ValueError(
        f"Unknown model provider {provider!r} in {spec!r}: use openai, anthropic or scripted"
    )


__all__ = [
    "AnthropicModel",
    "EmptyPromptError",
    "FinalResponse",
    "Model",
    "ModelSettings",
    "OpenAIChatModel",
    "ProviderSettings",
    "ScriptedModel",
    "StreamEvent",
    "StreamingModel",
    "TextDelta",
    "ToolSpec",
    "call",
    "register_script",
    "resolve_model",
    "respond",
]
