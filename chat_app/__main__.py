"""`python -m chat_app users …` / `tokens …`: the command line (`chat_app/cli.py`)."""

from chat_app.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
