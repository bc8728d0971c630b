"""Workspace data of the sandbox: people, groups, channels, messages, ephemerals, views.

Pure in-memory data with no I/O; the web API, the deliveries and the web page all read and
write it through these helpers so there is one source of truth.
"""

from __future__ import annotations

import copy
import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

TEAM_ID = "T_SANDBOX"
TEAM_NAME = "sayso sandbox"
TEAM_DOMAIN = "sayso-sandbox"
BOT_USER_ID = "U_SAYSO"
BOT_ID = "B_SAYSO"
APP_ID = "A_SAYSO"
GENERAL = "C_GENERAL"


@dataclass
class Person:
    """A member of the sandbox workspace (or of a Slack Connect partner workspace)."""

    id: str
    name: str
    real_name: str
    team_id: str = TEAM_ID
    is_restricted: bool = False
    is_ultra_restricted: bool = False
    is_admin: bool = False
    is_bot: bool = False
    title: str = ""

    def to_slack(self) -> dict[str, Any]:
        """The user object as `users.info` returns it."""
        profile = {
            "real_name": self.real_name,
            "display_name": self.name,
            "real_name_normalized": self.real_name,
            "display_name_normalized": self.name,
            "title": self.title,
            "email": f"{self.name.lower()}@{TEAM_DOMAIN}.example",
            "team": self.team_id,
            "image_48": "",
        }
        if self.is_bot:
            profile["bot_id"] = BOT_ID
            profile["api_app_id"] = APP_ID
        return {
            "id": self.id,
            "team_id": self.team_id,
            "name": self.name.lower(),
            "real_name": self.real_name,
            "deleted": False,
            "tz": "UTC",
            "tz_offset": 0,
            "profile": profile,
            "is_bot": self.is_bot,
            "is_app_user": self.is_bot,
            "is_admin": self.is_admin,
            "is_owner": False,
            "is_restricted": self.is_restricted,
            "is_ultra_restricted": self.is_ultra_restricted,
            "is_stranger": self.team_id != TEAM_ID,
            "updated": 1700000000,
        }


@dataclass
class UserGroup:
    id: str
    handle: str
    name: str
    users: list[str] = field(default_factory=list)


def default_people() -> list[Person]:
    """Riley asks, Avery and Jordan approve, Sam watches, Gale is a guest, Ext is external."""
    return [
        Person("U_REQUESTER", "Riley", "Riley Requester", title="Engineer"),
        Person("U_APPROVER", "Avery", "Avery Approver", title="Ops lead"),
        Person("U_APPROVER2", "Jordan", "Jordan Approver", title="SRE"),
        Person("U_MEMBER", "Sam", "Sam Member", title="Support"),
        Person("U_GUEST", "Gale", "Gale Guest", is_restricted=True, title="Contractor"),
        Person("U_EXTERNAL", "Ext", "Ext External", team_id="T_OTHER", title="Partner"),
    ]


def default_groups() -> list[UserGroup]:
    return [UserGroup("S_APPROVERS", "approvers", "Approvers", ["U_APPROVER", "U_APPROVER2"])]


def bot_person() -> Person:
    return Person(BOT_USER_ID, "sayso", "sayso", is_bot=True)


class TsClock:
    """Slack message timestamps: "<seconds>.<6 digits>", unique and strictly increasing."""

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> str:
        micros = max(int(time.time() * 1_000_000), self._last + 1)
        self._last = micros
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"


_counter = itertools.count(1)


def new_id(prefix: str, length: int = 10) -> str:
    """A Slack-looking id such as V0A1B2C3D4 (upper-case alphanumerics)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def new_trigger_id() -> str:
    return f"{next(_counter)}.{int(time.time())}.{secrets.token_hex(16)}"


@dataclass
class Ephemeral:
    channel: str
    user: str
    message: dict[str, Any]

    @property
    def ts(self) -> str:
        return self.message["ts"]


@dataclass
class OpenView:
    """A view as stored: the Slack view object plus where it lives and its field errors."""

    view: dict[str, Any]
    user: str
    errors: dict[str, str] = field(default_factory=dict)
    closed: bool = False


class Workspace:
    """All mutable workspace data."""

    def __init__(self, people: list[Person], groups: list[UserGroup]) -> None:
        self.people: dict[str, Person] = {p.id: p for p in [bot_person(), *people]}
        self.groups: dict[str, UserGroup] = {g.id: g for g in groups}
        self.channels: dict[str, dict[str, Any]] = {}
        self.history: dict[str, list[dict[str, Any]]] = {}  # channel -> all messages, by ts
        self.ephemerals: list[Ephemeral] = []
        self.views: dict[str, OpenView] = {}
        self.stacks: dict[str, list[str]] = {}  # user -> modal view ids, bottom first
        self.homes: dict[str, str] = {}  # user -> home view id
        self.members: dict[str, list[str]] = {}  # channel -> its members, when set explicitly
        # assistant pane threads: (dm channel, thread_ts) -> status, prompts, title
        self.assistant_threads: dict[tuple[str, str], dict[str, Any]] = {}
        self.clock = TsClock()
        self.ensure_channel(GENERAL, "general")

    # channels and messages -------------------------------------------------------------
    def ensure_channel(self, channel_id: str, name: str | None = None) -> dict[str, Any]:
        if channel_id not in self.channels:
            is_im = channel_id.startswith("D")
            self.channels[channel_id] = {
                "id": channel_id,
                "name": name or channel_id.lower(),
                "is_channel": not is_im,
                "is_im": is_im,
                "is_private": False,
                "is_member": True,
                "is_archived": False,
                "is_ext_shared": False,
                "context_team_id": TEAM_ID,
                "created": 1700000000,
                "topic": {"value": ""},
                "purpose": {"value": ""},
            }
            self.history[channel_id] = []
        return self.channels[channel_id]

    def channel_members(self, channel_id: str) -> list[str]:
        """Who is in a channel: as set with `set_members`, else everyone in the workspace."""
        if channel_id in self.members:
            return list(self.members[channel_id])
        return [p for p in self.people if p != BOT_USER_ID] + [BOT_USER_ID]

    def set_members(self, channel_id: str, users: list[str], *, private: bool) -> None:
        """Make a channel with exactly these members (and the bot)."""
        info = self.ensure_channel(channel_id)
        info["is_private"] = private
        self.members[channel_id] = [*users, BOT_USER_ID]

    def add_message(self, channel: str, message: dict[str, Any]) -> dict[str, Any]:
        """Store a message (ts assigned here); a thread reply updates its root's counters."""
        self.ensure_channel(channel)
        message = {"type": "message", **message, "ts": self.clock.next(), "team": TEAM_ID}
        thread_ts = message.get("thread_ts")
        if thread_ts:
            root = self.find(channel, thread_ts)
            if root is not None and root.get("thread_ts") not in (None, root["ts"]):
                root = self.find(channel, root["thread_ts"])  # a reply's ts: its thread
            if root is None:
                raise LookupError("thread_not_found")
            message["thread_ts"] = root["ts"]
            pane = self.assistant_threads.get((channel, root["ts"]))
            if pane is not None and message.get("bot_id"):
                pane["status"] = ""  # as in Slack: the app's reply clears its status
            root["thread_ts"] = root["ts"]
            root["reply_count"] = root.get("reply_count", 0) + 1
            users = root.setdefault("reply_users", [])
            who = message.get("user") or message.get("bot_id")
            if who and who not in users:
                users.append(who)
            root["reply_users_count"] = len(users)
            root["latest_reply"] = message["ts"]
            message["parent_user_id"] = root.get("user")
        self.history[channel].append(message)
        return message

    def find(self, channel: str, ts: str) -> dict[str, Any] | None:
        for message in self.history.get(channel, []):
            if message["ts"] == ts:
                return message
        return None

    def delete(self, channel: str, ts: str) -> bool:
        message = self.find(channel, ts)
        if message is None:
            return False
        self.history[channel].remove(message)
        return True

    def top_level(self, channel: str) -> list[dict[str, Any]]:
        return [
            m
            for m in self.history.get(channel, [])
            if not m.get("thread_ts") or m["thread_ts"] == m["ts"]
        ]

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        root = self.find(channel, ts)
        if root is None:
            return []
        replies = [
            m for m in self.history.get(channel, []) if m.get("thread_ts") == ts and m["ts"] != ts
        ]
        return [root, *replies]

    # ephemerals ------------------------------------------------------------------------
    def add_ephemeral(self, channel: str, user: str, message: dict[str, Any]) -> Ephemeral:
        self.ensure_channel(channel)
        message = {"type": "message", **message, "ts": self.clock.next(), "is_ephemeral": True}
        eph = Ephemeral(channel=channel, user=user, message=message)
        self.ephemerals.append(eph)
        return eph

    def find_ephemeral(self, user: str, ts: str) -> Ephemeral | None:
        for eph in self.ephemerals:
            if eph.user == user and eph.ts == ts:
                return eph
        return None

    # views -----------------------------------------------------------------------------
    def stack(self, user: str) -> list[OpenView]:
        return [self.views[v] for v in self.stacks.get(user, [])]

    def view_by_external_id(self, external_id: str) -> OpenView | None:
        for stored in self.views.values():
            if stored.view.get("external_id") == external_id and not stored.closed:
                return stored
        return None

    def close_views(self, user: str, view_ids: list[str]) -> None:
        stack = self.stacks.get(user, [])
        for view_id in view_ids:
            if view_id in stack:
                stack.remove(view_id)
            if view_id in self.views:
                self.views[view_id].closed = True


def snapshot(value: Any) -> Any:
    """A deep copy for handing data out to tests and pages without aliasing."""
    return copy.deepcopy(value)
