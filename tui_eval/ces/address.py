"""Where a CES app is: its MCP endpoint and its `ces://` URL. Light (no pydantic, no `mcp`): the dashboard's
command line reads it before the first paint, and the CES models load only for CES work."""

from __future__ import annotations

import re

DEFAULT_ENDPOINT = "https://ces.googleapis.com/mcp"
SCHEME = "ces://"
_APP_PATTERN = r"^projects/[^/]+/locations/[^/]+/apps/[^/]+$"  # compiled on first use (re caches it)


def regional_endpoint(location: str) -> str:
    """The regional MCP endpoint of a CES location, e.g. `us` -> https://ces.us.rep.googleapis.com/mcp."""
    return f"https://ces.{location}.rep.googleapis.com/mcp"


def parse_app_url(url: str) -> str:
    """`ces://projects/P/locations/L/apps/A` -> `projects/P/locations/L/apps/A`; ValueError when malformed."""
    app = url[len(SCHEME):] if url.startswith(SCHEME) else url
    app = app.strip("/")
    if not re.match(_APP_PATTERN, app):
        raise ValueError(f"{url}: expected ces://projects/PROJECT/locations/LOCATION/apps/APP")
    return app
