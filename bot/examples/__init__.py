"""Bundled example agents (the default `SAYSO_AGENTS`)."""
