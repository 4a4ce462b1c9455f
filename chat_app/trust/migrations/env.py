"""Alembic's environment for the app's database.

At start, `chat_app.trust.store.migrate` runs it with a connection already in a write
transaction (`config.attributes["connection"]`): the migrations run in that transaction and
are committed with it. Developers run it through the `alembic` command (see `alembic.ini`
beside this file), where the URL is `-x url=...`, else `CHAT_APP_DATABASE_URL`, else SQLite in
the data folder.

Imports `store` and `tables` only.
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection

from chat_app.trust.store import (
    DATABASE_URL_ENV,
    create_database_engine,
    data_folder,
    database_url,
    migration_transaction,
)
from chat_app.trust.tables import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite alters a table by copying it; autogenerate writes such changes that way.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def _developer_url() -> str:
    given = context.get_x_argument(as_dictionary=True).get("url")
    data_dir = data_folder(os.environ.get("CHAT_APP_DATA_DIR"))
    return database_url(given or os.environ.get(DATABASE_URL_ENV), data_dir)


def _main() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if isinstance(connection, Connection):
        _run(connection)
        return
    if config.config_file_name is not None:
        fileConfig(config.config_file_name)
    url = _developer_url()
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_database_engine(url)
    try:
        with migration_transaction(engine) as connection:
            _run(connection)
    finally:
        engine.dispose()


_main()
