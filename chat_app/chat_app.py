"""Reflex entry point: Reflex imports `app` from this module.

Keep this module thin. Pages live in `chat_app.ui.pages`; HTTP routes are
attached here through `rx.App(api_transformer=...)` when the server package
provides them.
"""

import reflex as rx

from chat_app.demo import build_demo_agent
from chat_app.server import create_app
from chat_app.ui.pages.index import index

app = rx.App(
    # POST /api/chat and GET /api/tools on the app's own port.
    api_transformer=create_app(build_demo_agent()),
    head_components=[rx.el.link(rel="icon", type="image/svg+xml", href="/favicon.svg")],
)
app.add_page(index, route="/", title="Ops desk · chat_app", image="/logo.svg")
