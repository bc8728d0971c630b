"""Alembic environment for sayso's store: run through `store.Store.upgrade()`, which passes
an open connection (and holds the upgrade lock) in `config.attributes`."""

from __future__ import annotations

from alembic import context

from store.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "sayso migrations run through the application (`await Store(url).upgrade()`), "
        "not the alembic command line."
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=config.attributes.get("version_table", "sayso_alembic_version"),
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)

with context.begin_transaction():
    context.run_migrations()
