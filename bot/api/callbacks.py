"""Where webhooks may go: `SAYSO_CALLBACK_HOSTS`, an allowlist of callback URL hosts.

Each entry is a host (`hooks.example.com`: any port), a host and port (`127.0.0.1:8080`), or
a wildcard for subdomains (`*.example.com`: `a.example.com`, not `example.com`). With no
entries every http(s) host is allowed, as before the setting existed. The list is checked when
a request is created (HTTP 422 names the field) and again before each delivery, so a host
removed from the list gets nothing more.

Whatever the list, a webhook never goes to a loopback, link-local, private, unique-local,
multicast or unspecified address unless an entry names that host explicitly (an entry, not the
empty list): checked on the address literal when the request is created, and on every address
the name resolves to before each delivery; the delivery then connects to the address checked
(pinned: a DNS answer that changes in between cannot move it; issue 21, finding 11).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit


class CallbackRefused(Exception):
    """A callback URL sayso will not post to; the message says why."""


def callback_host_allowed(url: str, hosts: Sequence[str]) -> bool:
    """Is `url` an http(s) URL whose host the allowlist names (any, for an empty list)?"""
    return _matches(url, hosts, empty_allows=True)


def callback_host_named(url: str, hosts: Sequence[str]) -> bool:
    """Does an allowlist entry name `url`'s host (and port)? Only then may it be private."""
    return _matches(url, hosts, empty_allows=False)


def _public(address: str) -> bool:
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
        address.split("%", 1)[0]
    )
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.is_site_local:
            return False
    return not (
        ip.is_loopback
        or ip.is_link_local
        or ip.is_private  # includes unique-local fc00::/7
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def private_literal(url: str, hosts: Sequence[str]) -> bool:
    """Is `url`'s host an address literal (or `localhost`) that is not public, and named by
    no allowlist entry? (Names are checked on their resolved addresses, at delivery.)"""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if callback_host_named(url, hosts):
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    literal = _literal(host)
    return literal is not None and not _public(literal)


async def pinned_url(url: str, hosts: Sequence[str]) -> tuple[str, str, str]:
    """(the URL with its host replaced by the address checked, the Host header, the TLS
    server name); CallbackRefused when the host resolves to an address it may not reach."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    named = callback_host_named(url, hosts)
    literal = _literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, parts.port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            raise CallbackRefused(f"cannot resolve {host!r} ({exc})") from None
        addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise CallbackRefused(f"{host!r} resolves to no address")
    if not named and not all(_public(a) for a in addresses):
        raise CallbackRefused(
            f"{host!r} resolves to a private or local address (name it in SAYSO_CALLBACK_HOSTS "
            "to allow it)"
        )
    address = addresses[0]
    shown = f"[{address}]" if ":" in address else address
    netloc = shown + (f":{parts.port}" if parts.port else "")
    host_header = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")), host_header, host


def _matches(url: str, hosts: Sequence[str], *, empty_allows: bool) -> bool:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower().rstrip(".")
    if parts.scheme not in ("http", "https") or not host:
        return False
    if not hosts:
        return empty_allows
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
