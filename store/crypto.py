"""Encryption at rest: Fernet keys (`SAYSO_ENCRYPTION_KEYS`), the first encrypts, all decrypt.

Encrypted columns (run state, request arguments, edited arguments, outputs, reasons) go through
the column types below. They find the cipher on the engine's dialect (`attach`), so one
process may hold stores with different keys. Without keys, values are stored as they are;
rows written before a key was set stay readable, and `sayso db reencrypt` rewrites them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

TEXT_PREFIX = "sayso-enc:v1:"
"""Marks an encrypted text value (a Fernet token follows)."""
JSON_KEY = "$sayso_enc"
"""An encrypted JSON value is stored as `{"$sayso_enc": "<Fernet token>"}`."""
_CIPHER_ATTR = "sayso_cipher"


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


def json_text(value: Any) -> str:
    """The JSON encoding of a value, as it is encrypted."""
    return json.dumps(value, separators=(",", ":"))


def is_encrypted_text(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(TEXT_PREFIX)


def is_encrypted_json(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and JSON_KEY in value


class EncryptedText(TypeDecorator[str]):
    """TEXT, encrypted when the engine has keys."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        cipher = cipher_of(dialect)
        if value is None or cipher is None:
            return value
        return TEXT_PREFIX + cipher.encrypt(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        if not is_encrypted_text(value):
            return value
        assert value is not None
        cipher = cipher_of(dialect)
        if cipher is None:
            raise _missing_key()
        return cipher.decrypt(value[len(TEXT_PREFIX) :])


class EncryptedJSON(TypeDecorator[Any]):
    """JSON (SQL NULL for None), stored as `{"$sayso_enc": token}` when the engine has keys."""

    impl = sa.JSON
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(none_as_null=True)

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        cipher = cipher_of(dialect)
        if value is None or cipher is None:
            return value
        return {JSON_KEY: cipher.encrypt(json_text(value))}

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if not is_encrypted_json(value):
            return value
        cipher = cipher_of(dialect)
        if cipher is None:
            raise _missing_key()
        return json.loads(cipher.decrypt(value[JSON_KEY]))
