"""The app database's migrations (Alembic): `env.py` and `versions/`, run by
`chat_app.trust.store.migrate` at start."""
