"""Slack front end: Bolt listeners and pure Block Kit builders."""
