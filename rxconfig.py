"""Reflex configuration for chat_app."""

import reflex as rx

config = rx.Config(
    app_name="chat_app",
    telemetry_enabled=False,
    # Declared explicitly: implicit Radix Themes enablement is deprecated, and so is
    # App(theme=...); the theme lives on the plugin.
    plugins=[
        rx.plugins.RadixThemesPlugin(
            theme=rx.theme(appearance="inherit", accent_color="indigo", radius="medium"),
        ),
    ],
    # The sitemap plugin is on by default; this app has no public pages to index.
    disable_plugins=[rx.plugins.SitemapPlugin],
    # The sticky prod badge would sit on top of the composer's Send button on narrow screens.
    show_built_with_reflex=False,
)
