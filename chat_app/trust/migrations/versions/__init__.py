"""One module per migration, named for what it adds (Alembic skips this file)."""
