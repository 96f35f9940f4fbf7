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
    openapi_url, title = app.openapi_url or "/openapi.json", f"{app.title} — API reference"
    swagger = {"validatorUrl": None, "tryItOutEnabled": True, "displayRequestDuration": True}

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        js, css, icon = (f"{PREFIX}/{name}" for name in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"))
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=js,
            swagger_css_url=css,
            swagger_favicon_url=icon,
            swagger_ui_parameters=swagger,
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        js, icon = f"{PREFIX}/redoc.standalone.js", f"{PREFIX}/favicon.png"
        return get_redoc_html(
            openapi_url=openapi_url, title=title, redoc_js_url=js, redoc_favicon_url=icon, with_google_fonts=False
        )
