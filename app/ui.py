"""The calculator page: ``GET /`` and ``/ui`` serve one HTML page whose script, styles and plots come from the
package (``/ui-assets``, no CDN) and talk to this service's own API only (a Content-Security-Policy says so to the
browser)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(__file__).parent / "ui"
PREFIX = "/ui-assets"
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Only this origin: the page cannot load or send anything elsewhere."""


def install(app: FastAPI) -> None:
    app.mount(PREFIX, StaticFiles(directory=ASSETS), name="ui-assets")
    page = (ASSETS / "index.html").read_text(encoding="utf-8")

    @app.get("/", include_in_schema=False)
    @app.get("/ui", include_in_schema=False)
    def calculator() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": POLICY, "Cache-Control": "no-cache"})
