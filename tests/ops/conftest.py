"""The ops tests use the store tests' backends: a real SQLite file and the machine's PostgreSQL."""

from tests.storage.conftest import db_url, make_store, store

__all__ = ["db_url", "make_store", "store"]
