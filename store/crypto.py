"""Encryption at rest: Fernet keys (`SAYSO_ENCRYPTION_KEYS`), the first encrypts, all decrypt.

Encrypted columns (run state, request arguments, edited arguments, outputs, reasons) go through
the column types below. They find the cipher on the engine's dialect (`attach`), so one
process may hold stores with different keys. Without keys, values are stored as they are;
rows written before a key was set stay readable, and `sayso db reencrypt` rewrites them.

Only envelopes sayso wrote are ever read as such: a value written without keys that would look
like one (a caller's `{"$sayso_enc": ...}`, a reason starting `sayso-enc:v1:`) is stored
escaped and read back as the data it is. A value no key decrypts is logged, counted and read as
`Unreadable`: its row fails alone, never the query or sweep it came in (issue 21, finding 3).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

TEXT_PREFIX = "sayso-enc:v1:"
"""Marks an encrypted text value (a Fernet token follows)."""
JSON_KEY = "$sayso_enc"
"""An encrypted JSON value is stored as `{"$sayso_enc": "<Fernet token>"}`."""
_CIPHER_ATTR = "sayso_cipher"
log = logging.getLogger("sayso.store")
T = TypeVar("T")


class EncryptionKeyError(Exception):
    """Encrypted data cannot be read: no key is set, or none of the keys set fits."""


class Cipher:
    """MultiFernet over the configured keys."""

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("at least one key is needed")
        try:
            self._fernet = MultiFernet([Fernet(k.encode()) for k in keys])
        except (ValueError, TypeError) as exc:
            raise ValueError(
                "SAYSO_ENCRYPTION_KEYS holds a value that is not a Fernet key (32 url-safe "
                'base64-encoded bytes; make one with `python -c "from cryptography.fernet '
                'import Fernet; print(Fernet.generate_key().decode())"`)'
            ) from exc

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise EncryptionKeyError(
                "None of the keys in SAYSO_ENCRYPTION_KEYS decrypts data in the database: add "
                "the key it was written with (any position after the first)."
            ) from None

    def rotate(self, token: str) -> str:
        """The token re-encrypted with the first key (MultiFernet.rotate)."""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken:
            raise EncryptionKeyError(
                "None of the keys in SAYSO_ENCRYPTION_KEYS decrypts data in the database."
            ) from None


def attach(dialect: Dialect, keys: Sequence[str]) -> None:
    """Encrypt what this engine writes (no keys: store plaintext)."""
    setattr(dialect, _CIPHER_ATTR, Cipher(keys) if keys else None)


def cipher_of(dialect: Dialect) -> Cipher | None:
    return getattr(dialect, _CIPHER_ATTR, None)


def _missing_key() -> EncryptionKeyError:
    return EncryptionKeyError(
        "The database holds encrypted data and SAYSO_ENCRYPTION_KEYS is not set: set it to the "
        "key(s) the data was written with."
    )


PLAIN_TEXT_PREFIX = "sayso-plain:v1:"
"""Marks a text value written without keys that would otherwise look like an envelope (it
starts with one of the two prefixes): sayso escapes it, so every envelope in the database is
one sayso wrote."""
PLAIN_JSON_KEY = "$sayso_plain"
"""A JSON value written without keys that would look like an envelope is stored as
`{"$sayso_plain": value}`."""

unreadable_count = 0
"""Values this process could not read since it started (each logged once, as it is read)."""


class Unreadable:
    """Stands in for a value no configured key decrypts: the row it belongs to is read, so
    one such row never aborts a query over many (a sweep, App Home, a re-encryption); using
    the value itself fails, for that row only; writing it back is refused."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<unreadable: {self.why}>"

    def __bool__(self) -> bool:
        return True


class UnreadableText(str, Unreadable):
    def __new__(cls, why: str) -> UnreadableText:
        self = super().__new__(cls, "")
        Unreadable.__init__(self, why)
        return self


class UnreadableJSON(dict[str, Any], Unreadable):
    def __init__(self, why: str) -> None:
        dict.__init__(self)
        Unreadable.__init__(self, why)


def check_readable(record: T) -> T:
    """The record, or EncryptionKeyError naming why one of its values cannot be read (the
    values of its dataclass parts too: a request's spec, policy and state)."""
    for value in (
        vars(record).values() if record is not None and hasattr(record, "__dict__") else ()
    ):
        if isinstance(value, Unreadable):
            raise EncryptionKeyError(value.why)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_readable(value)
    return record


def _unreadable(exc: EncryptionKeyError) -> str:
    global unreadable_count
    unreadable_count += 1
    log.warning("event=encrypted_value_unreadable count=%d error=%s", unreadable_count, exc.args[0])
    return str(exc.args[0])


def json_text(value: Any) -> str:
    """The JSON encoding of a value, as it is encrypted."""
    return json.dumps(value, separators=(",", ":"))


def is_encrypted_text(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(TEXT_PREFIX)


def is_encrypted_json(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and JSON_KEY in value


def _needs_text_escape(value: str) -> bool:
    return value.startswith((TEXT_PREFIX, PLAIN_TEXT_PREFIX))


def _needs_json_escape(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and (JSON_KEY in value or PLAIN_JSON_KEY in value)
    )


def plain_text(value: str) -> str:
    """A text value as stored without keys (escaped when it would look like an envelope)."""
    return PLAIN_TEXT_PREFIX + value if _needs_text_escape(value) else value


def plain_json(value: Any) -> Any:
    return {PLAIN_JSON_KEY: value} if _needs_json_escape(value) else value


def unescaped_text(value: str) -> str:
    return value[len(PLAIN_TEXT_PREFIX) :] if value.startswith(PLAIN_TEXT_PREFIX) else value


def unescaped_json(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and PLAIN_JSON_KEY in value:
        return value[PLAIN_JSON_KEY]
    return value


def _refuse_unreadable(value: Any) -> None:
    if isinstance(value, Unreadable):
        raise EncryptionKeyError(
            f"refusing to write back a value sayso could not read ({value.why})"
        )


class EncryptedText(TypeDecorator[str]):
    """TEXT, encrypted when the engine has keys."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        _refuse_unreadable(value)
        cipher = cipher_of(dialect)
        if value is None:
            return value
        if cipher is None:
            return plain_text(value)
        return TEXT_PREFIX + cipher.encrypt(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        if not is_encrypted_text(value):
            return unescaped_text(value)
        cipher = cipher_of(dialect)
        try:
            if cipher is None:
                raise _missing_key()
            return cipher.decrypt(value[len(TEXT_PREFIX) :])
        except EncryptionKeyError as exc:
            return UnreadableText(_unreadable(exc))


class EncryptedJSON(TypeDecorator[Any]):
    """JSON (SQL NULL for None), stored as `{"$sayso_enc": token}` when the engine has keys."""

    impl = sa.JSON
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(none_as_null=True)

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        _refuse_unreadable(value)
        cipher = cipher_of(dialect)
        if value is None:
            return value
        if cipher is None:
            return plain_json(value)
        return {JSON_KEY: cipher.encrypt(json_text(value))}

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if not is_encrypted_json(value):
            return unescaped_json(value)
        cipher = cipher_of(dialect)
        try:
            if cipher is None:
                raise _missing_key()
            return json.loads(cipher.decrypt(value[JSON_KEY]))
        except EncryptionKeyError as exc:
            return UnreadableJSON(_unreadable(exc))
