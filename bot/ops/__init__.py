"""Operating sayso: metrics, JSON logs, `sayso doctor`, the audit chain's verify, export and
SIEM webhook (issue 23)."""
