"""Saved runs: `RunResult` JSON as each schema version of sayso wrote it (see make_corpus.py)."""
