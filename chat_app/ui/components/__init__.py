"""Reusable UI components."""
