"""chat_app: human sign-off for AI agents."""
