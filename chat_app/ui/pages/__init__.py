"""Pages, one module per page."""
