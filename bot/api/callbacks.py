"""Where webhooks may go: `SAYSO_CALLBACK_HOSTS`, an allowlist of callback URL hosts.

Each entry is a host (`hooks.example.com`: any port), a host and port (`127.0.0.1:8080`), or
a wildcard for subdomains (`*.example.com`: `a.example.com`, not `example.com`). With no
entries every http(s) host is allowed, as before the setting existed. The list is checked when
a request is created (HTTP 422 names the field) and again before each delivery, so a host
removed from the list gets nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit


def callback_host_allowed(url: str, hosts: Sequence[str]) -> bool:
    """Is `url` an http(s) URL whose host the allowlist names (any, for an empty list)?"""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower().rstrip(".")
    if parts.scheme not in ("http", "https") or not host:
        return False
    if not hosts:
        return True
    for entry in hosts:
        name, _, wanted = entry.lower().rstrip(".").partition(":")
        if wanted:
            default = 443 if parts.scheme == "https" else 80
            if not wanted.isdigit() or int(wanted) != (port or default):
                continue
        if name.startswith("*."):
            if host.endswith(name[1:]) and host != name[2:]:
                return True
        elif host == name:
            return True
    return False
