"""Reflex UI for chat_app: state, components and pages."""
