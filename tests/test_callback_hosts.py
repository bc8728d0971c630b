"""SAYSO_CALLBACK_HOSTS (bot/api/callbacks.py): which webhook URLs the allowlist lets through."""

from __future__ import annotations

import pytest

from bot.api.callbacks import callback_host_allowed
from bot.config import Settings

HOSTS = ("hooks.example.com", "*.corp.example", "127.0.0.1:8080")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://hooks.example.com/sayso", True),
        ("http://HOOKS.example.com:9000/x", True),  # a bare host allows any port
        ("https://a.corp.example/x", True),
        ("https://a.b.corp.example/x", True),
        ("https://corp.example/x", False),  # a wildcard names subdomains only
        ("http://127.0.0.1:8080/hook", True),
        ("http://127.0.0.1/hook", False),
        ("http://127.0.0.1:8081/hook", False),
        ("http://169.254.169.254/latest/meta-data/", False),
        ("https://hooks.example.com.evil.test/", False),
        ("https://evil.test/?u=hooks.example.com", False),
        ("https://hooks.example.com@evil.test/", False),  # userinfo is not the host
        ("ftp://hooks.example.com/", False),
        ("http://[::1]:99999/", False),  # a port out of range
    ],
)
def test_the_allowlist(url: str, allowed: bool) -> None:
    assert callback_host_allowed(url, HOSTS) is allowed


def test_no_list_allows_any_http_host() -> None:
    assert callback_host_allowed("http://10.0.0.1/x", ())
    assert not callback_host_allowed("file:///etc/passwd", ())


def test_the_setting_is_a_comma_separated_list() -> None:
    s = Settings(_env_file=None, sayso_callback_hosts="hooks.example.com, *.corp.example")  # type: ignore[call-arg]
    assert s.sayso_callback_hosts == ("hooks.example.com", "*.corp.example")
    with pytest.raises(ValueError, match="host"):
        Settings(_env_file=None, sayso_callback_hosts="https://hooks.example.com/x")  # type: ignore[call-arg]
