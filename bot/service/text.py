"""People, groups and channels inside the service's messages, as neutral tokens.

The service never writes a front end's markup: it names a person with `person(id)` and a
channel with `channel(id)`; bot/slack renders the tokens as mentions and channel links, and
`plain` renders them as ids for everyone else (the API, logs)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

TOKEN = re.compile(r"\{\{(user|group|channel):([A-Za-z0-9_]+)\}\}")


def person(user_or_group_id: str) -> str:
    """A user (`U…`, `W…`) or a user group (`S…`)."""
    kind = "group" if user_or_group_id.startswith("S") else "user"
    return f"{{{{{kind}:{user_or_group_id}}}}}"


def people(ids: Sequence[str]) -> str:
    return ", ".join(person(i) for i in ids)


def channel(channel_id: str) -> str:
    return f"{{{{channel:{channel_id}}}}}"


def render(text: str, token: Callable[[str, str], str]) -> str:
    """`text` with each token replaced by `token(kind, id)`."""
    return TOKEN.sub(lambda m: token(m.group(1), m.group(2)), text)


def plain(text: str) -> str:
    return render(text, lambda kind, id_: f"#{id_}" if kind == "channel" else f"@{id_}")
