"""Ports on 127.0.0.1 for the servers tests start (bot, sandbox, replicas, demo)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
