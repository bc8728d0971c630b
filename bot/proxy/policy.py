"""The `proxy:` section of the policy file: which calls of a proxied MCP server (`sayso proxy
--name N`) or of Claude Code (`sayso hook claude-code`, server name `claude-code`) need a
person, and what they ask.

```yaml
proxy:
  github:                        # sayso proxy --name github -- ...
    channel: C0123OPS            # optional: where its cards go (else the key's channel)
    default: approve             # optional: tools not named (else: readOnlyHint passes)
    tools:
      "get_*": {action: allow}   # a name or a glob; an exact name wins over globs,
      "delete_*": {action: deny} # then the first glob that matches, in file order
      create_pull_request:
        approvers: [S0LEADS]     # and min_approvals, allow_self_approval, require_reason,
        expires_in: 2h           # expires_in, escalate_after, escalate_to, as for agents
  claude-code:                   # sayso hook claude-code
    timeout: 10m                 # how long the hook waits for a decision (default 10m)
    on_timeout: ask              # then: ask (the terminal prompt) or deny
    tools:
      Read: {action: allow}
      Bash:
        rules:                   # the first matching rule applies (as for agents)
          - when: {command: {regex: "rm -rf|git push --force|terraform apply"}}
            approvers: [S0SRE]
```

`action` is allow, deny or approve. A tool entry without `action` needs approval, except
one with `rules`: it then asks only when a rule matches (a rule may set `action` too).

This module is read by `sayso hook claude-code` on every tool call, so it imports nothing of
sayso's engine: the agents' policy reader (bot/service/policy/file.py) loads the agent runtime,
which alone takes longer than the hook's whole budget. The YAML is read by
bot/proxy/policy_yaml.py (with that reader's keys, matches and `path:line: reason` errors), and
the hook keeps what it read in a JSON cache keyed by the file's size and times, so an
unchanged file costs no YAML parser at all (`load_proxy_policy(path, cache=True)`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Literal

    Action = Literal["allow", "deny", "approve"]
    VerdictAction = Literal["allow", "deny", "approve", "none"]

ACTIONS = ("allow", "deny", "approve")
CACHE_VERSION = 1


class ProxyPolicyError(ValueError):
    """A `proxy:` section that cannot be used: `path:line: reason`."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(value: Any) -> float:
    """`90s`, `30m`, `24h`, `7d` or a number of seconds (as the agents' policy takes them)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("a duration must be positive")
        return float(value)
    match = _DURATION.match(str(value))
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{value!r} is not a duration (90s, 30m, 24h, 7d or seconds)")
    return float(match.group(1)) * _UNITS[match.group(2)]


class Gate(NamedTuple):
    """What a gated call asks of people: who, how many, until when."""

    approvers: tuple[str, ...] = ()
    min_approvals: int = 1
    allow_self_approval: bool = True
    require_reason: bool = False
    expires_in: float | None = None
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()


class ArgMatch(NamedTuple):
    """One argument test of a rule's `when:` (equals, one_of, glob, regex)."""

    arg: str
    kind: str
    value: Any

    def __call__(self, arguments: Mapping[str, Any]) -> bool:
        got = arguments.get(self.arg)
        if self.kind == "equals":
            return bool(got == self.value)
        if self.kind == "one_of":
            return got in self.value
        if not isinstance(got, str):
            return False
        if self.kind == "glob":
            return fnmatch.fnmatchcase(got, self.value)
        return re.search(self.value, got) is not None


class ProxyRule(NamedTuple):
    name: str
    when: tuple[ArgMatch, ...]
    action: Action | None
    gate: Gate
    """The tool's settings with the rule's over them."""

    def matches(self, arguments: Mapping[str, Any]) -> bool:
        return all(test(arguments) for test in self.when)


class ToolEntry(NamedTuple):
    pattern: str
    line: int
    action: Action | None = None
    gate: Gate = Gate()
    rules: tuple[ProxyRule, ...] = ()

    @property
    def is_glob(self) -> bool:
        return any(c in self.pattern for c in "*?[")


class Verdict(NamedTuple):
    """What the policy says of one call: `action` (`none`: the policy says nothing), what
    people are asked when it is `approve`, the rule that applied, and why, in a sentence."""

    action: VerdictAction
    gate: Gate = Gate()
    rule: str | None = None
    why: str = ""


class ServerPolicy(NamedTuple):
    name: str
    tools: tuple[ToolEntry, ...] = ()
    default: Action | None = None
    channel: str | None = None
    timeout: float | None = None
    on_timeout: str = "ask"
    """ask or deny (the hook, when no decision comes in time)."""

    def entry(self, tool: str) -> ToolEntry | None:
        """The tool's entry: its exact name, else the first glob that matches it."""
        for entry in self.tools:
            if entry.pattern == tool:
                return entry
        for entry in self.tools:
            if entry.is_glob and fnmatch.fnmatchcase(tool, entry.pattern):
                return entry
        return None

    def decide(
        self, tool: str, arguments: Mapping[str, Any], *, read_only: bool | None = None
    ) -> Verdict:
        """The verdict of one call. `read_only`: the upstream's `readOnlyHint` (None: unknown,
        as for Claude Code's tools, which then get no verdict unless the section has a
        default)."""
        entry = self.entry(tool)
        if entry is None:
            return self._unnamed(tool, read_only)
        named = f"{tool!r} matches {entry.pattern!r} (line {entry.line})"
        for index, rule in enumerate(entry.rules):
            if rule.matches(arguments):
                why = f"{named}; rule {rule.name!r} (#{index + 1}) is the first whose `when` holds"
                return Verdict(rule.action or "approve", rule.gate, rule.name, why)
        if entry.action is not None:
            return Verdict(entry.action, entry.gate, None, f"{named}: action {entry.action}")
        if entry.rules:
            return Verdict("allow", entry.gate, None, f"{named}; no rule matches: it passes")
        return Verdict("approve", entry.gate, None, f"{named}: it needs approval")

    def _unnamed(self, tool: str, read_only: bool | None) -> Verdict:
        if self.default is not None:
            why = f"{tool!r} is not named: the server's default ({self.default}) applies"
            return Verdict(self.default, Gate(), None, why)
        if read_only is None:
            return Verdict("none", Gate(), None, f"{tool!r} is not named and there is no default")
        if read_only:
            return Verdict("allow", Gate(), None, f"{tool!r} is not named; readOnlyHint: passes")
        why = f"{tool!r} is not named and is not marked readOnlyHint: it needs approval"
        return Verdict("approve", Gate(), None, why)


class ProxyPolicy(NamedTuple):
    path: str | None = None
    servers: dict[str, ServerPolicy] = {}  # noqa: RUF012 - never mutated

    def server(self, name: str) -> ServerPolicy:
        """The server's section (an empty one, annotations deciding, when it has none)."""
        return self.servers.get(name) or ServerPolicy(name)


def parse_proxy_policy(text: str, name: str = "<policy>") -> ProxyPolicy:
    """The `proxy:` section of a policy file's text; ProxyPolicyError names a bad line."""
    from bot.proxy.policy_yaml import read_proxy_section

    return ProxyPolicy(name, read_proxy_section(text, name))


def load_proxy_policy(path: str | os.PathLike[str] | None, *, cache: bool = False) -> ProxyPolicy:
    """The `proxy:` section of the policy file at `path` (empty with no path or section).
    Raise ProxyPolicyError naming the line of the first problem. With `cache`, what was read
    is kept in a JSON file (see `cache_dir`) and used while the file is unchanged."""
    if not path:
        return ProxyPolicy()
    name = os.fspath(path)
    try:
        stat = os.stat(name)
    except OSError as exc:
        raise ProxyPolicyError(name, 0, f"cannot read the file ({exc.strerror})") from None
    stamp = [CACHE_VERSION, os.path.abspath(name), stat.st_size, stat.st_mtime_ns]
    stamp += [stat.st_ctime_ns, stat.st_ino]
    where = _cache_file(name) if cache else None
    if where is not None:
        kept = _read_cache(where, stamp)
        if kept is not None:
            return ProxyPolicy(name, kept)
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProxyPolicyError(name, 0, f"cannot read the file ({exc})") from None
    policy = parse_proxy_policy(text, name)
    if where is not None:
        _write_cache(where, stamp, policy.servers)
    return policy


def cache_dir() -> str:
    """`$XDG_CACHE_HOME/sayso` (~/.cache/sayso)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sayso")


def _cache_file(path: str) -> str:
    import zlib  # a name from the path; the stamp inside says whose (and when) it is

    full = os.path.abspath(path)
    return os.path.join(cache_dir(), f"policy-{zlib.crc32(full.encode()):08x}.json")


def _read_cache(where: str, stamp: list[Any]) -> dict[str, ServerPolicy] | None:
    try:
        with open(where, encoding="utf-8") as f:
            kept = json.load(f)
        if kept.get("stamp") != stamp:
            return None
        return {name: _server_of(body) for name, body in kept["servers"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(where: str, stamp: list[Any], servers: dict[str, ServerPolicy]) -> None:
    body = {"stamp": stamp, "servers": {n: _json_of(s) for n, s in servers.items()}}
    try:
        os.makedirs(os.path.dirname(where), exist_ok=True)
        temporary = f"{where}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(body, f)
        os.replace(temporary, where)
    except OSError:
        pass  # no cache: the next call reads the YAML again


def _json_of(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _json_of(v) for k, v in value._asdict().items()}
    if isinstance(value, tuple | list):
        return [_json_of(v) for v in value]
    return value


def _gate_of(body: dict[str, Any]) -> Gate:
    body = dict(body)
    body["approvers"] = tuple(body.get("approvers") or ())
    body["escalate_to"] = tuple(body.get("escalate_to") or ())
    return Gate(**body)


def _match_of(body: dict[str, Any]) -> ArgMatch:
    value = body["value"]
    return ArgMatch(body["arg"], body["kind"], tuple(value) if isinstance(value, list) else value)


def _server_of(body: dict[str, Any]) -> ServerPolicy:
    tools = tuple(
        ToolEntry(
            t["pattern"],
            t["line"],
            t["action"],
            _gate_of(t["gate"]),
            tuple(
                ProxyRule(
                    r["name"],
                    tuple(_match_of(m) for m in r["when"]),
                    r["action"],
                    _gate_of(r["gate"]),
                )
                for r in t["rules"]
            ),
        )
        for t in body["tools"]
    )
    return ServerPolicy(
        body["name"], tools, body["default"], body["channel"], body["timeout"], body["on_timeout"]
    )


def read_only_of(annotations: Any) -> bool:
    """An MCP tool's `readOnlyHint` (absent: False, as the spec's default)."""
    if annotations is None:
        return False
    if isinstance(annotations, dict):
        return bool(annotations.get("readOnlyHint", False))
    return bool(getattr(annotations, "read_only_hint", False))
