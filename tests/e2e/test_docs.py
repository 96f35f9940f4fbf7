"""The interactive docs work offline: /docs and /redoc reference only local URLs, and Swagger UI renders the
operations in a real headless browser (Debian's chromium, installed by .ci/run where apt is available)."""

import re
import subprocess
import tempfile

import pytest

from ..support.browser import CHROMIUM, FLAGS

URL_ATTRIBUTE = re.compile(r"""(?:src|href|url)\s*[=:(]\s*["']?([^"' )>]+)""", re.IGNORECASE)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_reference_only_local_urls(http, page):
    response = http.get(page)
    assert response.status_code == 200
    html = response.text
    for url in URL_ATTRIBUTE.findall(html):
        assert not re.match(r"^(https?:)?//", url), f"{page} references {url}"
    assert "cdn" not in html.lower() and "fonts.googleapis" not in html
    for asset in re.findall(r'(?:src|href)="(/docs-assets/[^"]+)"', html):
        assert http.get(asset).status_code == 200, asset


def test_assets_are_served(http):
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"):
        assert http.get(f"/docs-assets/{name}").status_code == 200


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (.ci/run installs Debian's chromium)")
def test_swagger_ui_renders_the_operations_in_a_headless_browser(live_server):
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [
                str(CHROMIUM),
                "--headless",
                *FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=15000",
                "--dump-dom",
                f"{live_server}/docs",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        ).stdout
    assert "swagger-ui" in dom
    for path in ("/v1/calibrate", "/v1/privacy", "/v1/utility", "/v1/algorithms"):
        assert path in dom, f"{path} not rendered"
    assert "opblock" in dom  # Swagger UI's operation blocks
