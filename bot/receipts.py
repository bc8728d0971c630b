"""Signed receipts: a decision bound to the exact arguments that will run.

Every decided request yields a receipt: the request id, the tool, the SHA-256 of the canonical
JSON of the arguments that will run (the edited ones after an Edit), the decision, who decided,
the rule that applied and when the receipt expires. sayso signs it with Ed25519 under the
deployment's key (`SAYSO_SIGNING_KEY`, made by `sayso keys signing-key`); anyone holding the
public key (`GET /v1/receipts/public-key`) checks it with `verify_receipt`, and refuses a call
whose tool or arguments differ from what was approved, an expired receipt or another key's.

A receipt is computed from the decided request when it is read, never stored: Ed25519
signatures are deterministic, so the same decision always gives the same receipt.

This module imports only the standard library at load (`cryptography` when a key is used):
`bot.client` re-exports `verify_receipt`, and the proxy and the hook import it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

VERSION = 1
KEY_PREFIX = "ed25519:"
DEFAULT_TTL = timedelta(hours=1)
"""How long after its decision an approval's receipt lets the call run."""
RUNNABLE = ("approve", "edit")
"""The decisions whose receipt lets a call run."""


class ReceiptRefused(ValueError):
    """A receipt that does not let this call run; `reason` says why in a sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def canonical_json(value: Any) -> bytes:
    """The one byte string of a JSON value: sorted keys, no spaces, UTF-8 (RFC 8785 for the
    values tool arguments hold: strings, integers, booleans, null, lists, objects)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def arguments_sha256(arguments: Mapping[str, Any] | None) -> str:
    return hashlib.sha256(canonical_json(dict(arguments or {}))).hexdigest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_signing_key() -> str:
    """A fresh private key, as SAYSO_SIGNING_KEY takes it: `ed25519:<base64url seed>`."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    key = Ed25519PrivateKey.generate()
    return KEY_PREFIX + _b64(key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))


def _private_key(text: str) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    raw = text.strip()
    if not raw.startswith(KEY_PREFIX):
        raise ValueError("a signing key starts with 'ed25519:' (make one: sayso keys signing-key)")
    try:
        seed = _unb64(raw[len(KEY_PREFIX) :])
        return Ed25519PrivateKey.from_private_bytes(seed)
    except ValueError as exc:
        raise ValueError(
            f"not an Ed25519 key ({exc}): make one with sayso keys signing-key"
        ) from None


def public_key_text(key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return KEY_PREFIX + _b64(key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def key_id(public_key: str) -> str:
    """A short fingerprint of a public key (the receipt names the key that signed it)."""
    return hashlib.sha256(public_key.encode()).hexdigest()[:16]


def _public_key(key: Any) -> Ed25519PublicKey:
    """A public key from `ed25519:<base64url>`, PEM text or bytes, raw bytes, or the object."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    if isinstance(key, Ed25519PublicKey):
        return key
    if isinstance(key, Mapping):  # the body of GET /v1/receipts/public-key
        key = key.get("public_key")
    if isinstance(key, str) and key.startswith(KEY_PREFIX):
        return Ed25519PublicKey.from_public_bytes(_unb64(key[len(KEY_PREFIX) :]))
    raw = key.encode() if isinstance(key, str) else bytes(key)
    if raw.lstrip().startswith(b"-----BEGIN"):
        loaded = load_pem_public_key(raw)
        if not isinstance(loaded, Ed25519PublicKey):
            raise ValueError("not an Ed25519 public key")
        return loaded
    return Ed25519PublicKey.from_public_bytes(raw)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ReceiptSigner:
    """Signs receipts with the deployment's private key."""

    private_key: Ed25519PrivateKey
    ttl: timedelta = DEFAULT_TTL

    @classmethod
    def from_text(cls, text: str, ttl: timedelta = DEFAULT_TTL) -> ReceiptSigner:
        return cls(_private_key(text), ttl)

    @property
    def public_key(self) -> str:
        return public_key_text(self.private_key.public_key())

    def public_key_body(self) -> dict[str, Any]:
        """GET /v1/receipts/public-key."""
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        pem = self.private_key.public_key().public_bytes(
            Encoding.PEM, PublicFormat.SubjectPublicKeyInfo
        )
        public = self.public_key
        return {
            "algorithm": "Ed25519",
            "public_key": public,
            "key_id": key_id(public),
            "pem": pem.decode(),
        }

    def receipt(
        self,
        *,
        request_id: str,
        tool: str,
        arguments: Mapping[str, Any] | None,
        decision: str,
        decided_by: str | None,
        decided_at: datetime | None,
        rule: str | None,
    ) -> dict[str, Any]:
        """The signed receipt of one decision (the same inputs, the same receipt)."""
        expires = decided_at + self.ttl if decided_at is not None else None
        body: dict[str, Any] = {
            "v": VERSION,
            "request_id": request_id,
            "tool": tool,
            "arguments_sha256": arguments_sha256(arguments),
            "decision": decision,
            "decided_by": decided_by,
            "decided_at": _iso(decided_at),
            "rule": rule,
            "expires_at": _iso(expires),
            "key_id": key_id(self.public_key),
        }
        body["signature"] = _b64(self.private_key.sign(canonical_json(body)))
        return body


def _parse_time(text: Any) -> datetime:
    if not isinstance(text, str):
        raise ReceiptRefused("the receipt has no expiry")
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def check_signature(receipt: Mapping[str, Any], public_key: Any) -> None:
    """Raise ReceiptRefused unless `receipt` was signed by the key whose public half is given."""
    from cryptography.exceptions import InvalidSignature

    if not isinstance(receipt, Mapping) or not isinstance(receipt.get("signature"), str):
        raise ReceiptRefused("no signed receipt")
    body = {k: v for k, v in receipt.items() if k != "signature"}
    try:
        key = _public_key(public_key)
        key.verify(_unb64(receipt["signature"]), canonical_json(body))
    except (InvalidSignature, ValueError, TypeError):
        raise ReceiptRefused("the receipt's signature does not verify with this key") from None


def verify_receipt(
    receipt: Mapping[str, Any] | None,
    tool: str,
    arguments: Mapping[str, Any] | None,
    public_key: Any,
    *,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Check that `receipt` lets `tool` run with exactly `arguments` now; return it.

    Raises ReceiptRefused (a ValueError) saying why otherwise: a signature that does not verify
    with `public_key` (a wrong key, or any field changed), a decision that does not allow the
    call (reject), another tool, other arguments (any value, added or removed key), or an
    expired receipt. `public_key`: `ed25519:<base64url>` (as /v1/receipts/public-key gives
    it), that endpoint's JSON body, PEM, raw bytes, or an Ed25519PublicKey.
    """
    if receipt is None:
        raise ReceiptRefused("no receipt")
    check_signature(receipt, public_key)
    if receipt.get("decision") not in RUNNABLE:
        raise ReceiptRefused(f"the decision was {receipt.get('decision')!r}: the call may not run")
    if receipt.get("tool") != tool:
        raise ReceiptRefused(f"the receipt is for tool {receipt.get('tool')!r}, not {tool!r}")
    if receipt.get("arguments_sha256") != arguments_sha256(arguments):
        raise ReceiptRefused("the arguments differ from the approved ones")
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if _parse_time(receipt.get("expires_at")) <= moment:
        raise ReceiptRefused(f"the receipt expired at {receipt.get('expires_at')}")
    return dict(receipt)


__all__ = [
    "ReceiptRefused",
    "ReceiptSigner",
    "arguments_sha256",
    "canonical_json",
    "new_signing_key",
    "verify_receipt",
]
