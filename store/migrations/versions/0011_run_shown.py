"""Runs remember which version's end (answer, failure, status) was put to Slack, so a process
that dies between a run's completion and its answer leaves it for the sweep (issue 22).

Revision ID: 0011_run_shown
Revises: 0010_api_quota
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_run_shown"
down_revision = "0010_api_quota"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("shown_version", sa.Integer, nullable=True))
    # Every run stored before this revision counts as shown: none is re-shown by the upgrade.
    op.execute("UPDATE runs SET shown_version = version")


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("shown_version")
