"""Errors raised by the runtime. Caller mistakes are `ValueError`s with exact messages."""

from __future__ import annotations


class ModelError(Exception):
    """A model request failed. `retryable` errors (429, 5xx, timeouts) are retried with backoff."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class UnknownSchemaVersionError(ValueError):
    """Saved run state was written by a newer (or unknown) schema version."""


class ToolError(Exception):
    """Raised by a tool body to fail the call with a message people and the model see as
    written (other exceptions show their type, scrubbed text and an error id)."""
