"""Interactive docs that work offline: Swagger UI at /docs and ReDoc at /redoc, with their JavaScript, CSS and
favicon served from the installed ``fastapi-offline`` package (no CDN, no Google Fonts)."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
PREFIX = "/docs-assets"


def install(app: FastAPI) -> None:
    app.mount(PREFIX, StaticFiles(directory=ASSETS), name="docs-assets")
    title = f"{app.title} — API reference"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None, "tryItOutEnabled": True, "displayRequestDuration": True},
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            redoc_js_url=f"{PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{PREFIX}/favicon.png",
            with_google_fonts=False,
        )
