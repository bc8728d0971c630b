"""manifest.yml is a Slack app manifest that matches what the bot listens to."""

from __future__ import annotations

from pathlib import Path

import yaml

MANIFEST = yaml.safe_load((Path(__file__).resolve().parents[1] / "manifest.yml").read_text())


def test_slash_command_and_interactivity() -> None:
    commands = MANIFEST["features"]["slash_commands"]
    assert [c["command"] for c in commands] == ["/sayso"]
    assert all(len(c["description"]) <= 100 for c in commands)
    assert MANIFEST["settings"]["interactivity"]["is_enabled"] is True
    assert MANIFEST["settings"]["socket_mode_enabled"] is True
    assert MANIFEST["features"]["app_home"]["home_tab_enabled"] is True


def test_scopes_cover_the_features() -> None:
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    assert {"commands", "chat:write", "users:read", "usergroups:read"} <= scopes
    assert {"app_mentions:read", "channels:history"} <= scopes  # mentions and thread replies


def test_events_match_the_listeners() -> None:
    events = set(MANIFEST["settings"]["event_subscriptions"]["bot_events"])
    assert {"app_mention", "message.channels", "app_home_opened"} <= events
    assert MANIFEST["display_information"]["name"] == "sayso"


def test_the_assistant_pane_is_enabled_with_its_scopes_and_events() -> None:
    assert MANIFEST["features"]["assistant_view"]["assistant_description"]
    assert {"assistant:write", "im:history"} <= set(MANIFEST["oauth_config"]["scopes"]["bot"])
    events = set(MANIFEST["settings"]["event_subscriptions"]["bot_events"])
    assert {"assistant_thread_started", "assistant_thread_context_changed", "message.im"} <= events
