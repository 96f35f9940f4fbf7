"""The calculator page in a real headless browser (Debian's chromium, installed by .ci/run; driven by Playwright's
Python package with ``executable_path``, no browser download): the default example's tight σ and the ε-over-training
plot, a change of algorithm, no request off the loopback address, and an axe-core accessibility check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from accountants import registry

from ..support.browser import CHROMIUM, FLAGS
from ..support.server import ROOT

VENDOR = Path(__file__).parent.parent / "vendor" / "axe-core" / "axe.min.js"
WAIT_MS = 180_000  # a generous bound on a busy 2-core machine; the test waits on the page's state, not on time
PLOTS_READY = "document.querySelector('#status').textContent === 'Answer and plots ready.'"


def _calibration(http, algorithm: str) -> dict:
    detail = http.get(f"/v1/algorithms/{algorithm}").json()
    examples = detail["examples"]
    body = {
        "algorithm": algorithm,
        "params": examples["calibrate"],
        "target_epsilon": examples["target_epsilon"],
        "delta": 1e-5,
    }
    return http.post("/v1/calibrate", json=body).json()


def _calibrated(http, algorithm: str) -> float:
    return _calibration(http, algorithm)["calibrated_value"]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield launched
        launched.close()


def _answer_is(page, value: float) -> None:
    page.wait_for_function(
        f"Math.abs(Number(document.querySelector('#answer-value').title) - {value!r}) <= 1e-12 * {value!r} "
        f"&& {PLOTS_READY}",
        timeout=WAIT_MS,
    )


def test_the_calculator_computes_plots_and_stays_on_loopback(browser, live_server, http, tmp_path):
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 1600})
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{live_server}/")

    # the default example: dp-sgd, n = 60 000, b = 256, 60 epochs, ε = 3, δ = 1e-5, best (= tight) σ
    sigma = _calibrated(http, "dp-sgd")
    _answer_is(page, sigma)
    assert page.text_content("#answer-value") == f"{sigma:.5g}" == "0.96848"
    assert "tight" in page.text_content("#answer-label")
    assert page.locator("#plot-training svg polyline").count() == 1
    assert page.locator("#plot-renyi svg polyline").count() == 1
    assert "epochs" in page.text_content("#plot-training svg")
    assert "add-remove" in page.text_content("#conventions")
    # the curve is drawn by the headline's accountant and ends at its ε; every plot says which accountant drew it
    headline = _calibration(http, "dp-sgd")
    final = float(page.get_attribute("#plot-training .plot", "data-final-epsilon"))
    assert final == pytest.approx(headline["epsilon"], rel=1e-4) and headline["accountant"] == "tight"
    captions = page.locator("figure figcaption").all_text_contents()
    assert len(captions) == 4 and all("accountant" in c for c in captions), captions
    assert "(tight accountant)" in captions[0]
    page.screenshot(path=str(tmp_path / "calculator.png"), full_page=True)
    assert (tmp_path / "calculator.png").stat().st_size > 10_000
    assert "algorithm=dp-sgd" in page.url and "p.batch_size=256" in page.url  # the state is in the URL

    # an invalid field: one message, naming it
    page.fill("#param-batch_size", "1000000")
    page.wait_for_function("!document.querySelector('#problem').hidden", timeout=WAIT_MS)
    messages = page.locator("#problem p").all_text_contents()
    assert len(messages) == 1 and messages[0].startswith("params.batch_size: must not exceed dataset_size"), messages
    page.fill("#param-batch_size", "256")
    _answer_is(page, sigma)

    # an object field (dp-mf's strategy) is edited as JSON and sent as an object
    page.select_option("#algorithm", "dp-mf")
    _answer_is(page, _calibrated(http, "dp-mf"))
    assert json.loads(page.input_value("#param-strategy")) == dict(registry.get("dp-mf").example)["strategy"]
    assert "zero-out" in page.text_content("#conventions")

    # another algorithm: its own form and answer
    page.select_option("#algorithm", "phased-output-perturbation")
    _answer_is(page, _calibrated(http, "phased-output-perturbation"))
    assert "algorithm=phased-output-perturbation" in page.url

    # copy as code produces the exact request; the Python one runs and prints the headline, not the answer's repr
    page.click("[data-copy=curl]")
    assert "/v1/calibrate" in page.text_content("#snippet")
    page.click("[data-copy=python]")
    run = subprocess.run(
        [sys.executable, "-c", page.text_content("#snippet")], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert run.returncode == 0 and run.stdout.startswith("noise_multiplier ") and len(run.stdout) < 200, run

    # a verification job: progress with the time left (the plan's estimate at first), then measured against predicted
    page.evaluate(
        """() => { window.statusLog = []; const node = document.querySelector('#job-status');
        new MutationObserver(() => window.statusLog.push(node.textContent)).observe(node, {childList: true,
        characterData: true, subtree: true}); }"""
    )
    page.click("#run-job")
    page.wait_for_function("document.querySelector('#job-status').textContent.startsWith('succeeded')", timeout=WAIT_MS)
    assert any(" s left" in status for status in page.evaluate("window.statusLog")), page.evaluate("window.statusLog")
    result = page.text_content("#job-result")
    assert "audit lower bound on ε" in result and "accounted ε" in result and "audit power" in result

    hosts = {urlsplit(url).hostname for url in requested}
    assert hosts == {"127.0.0.1"}, hosts
    context.close()


def test_the_calculator_has_no_serious_accessibility_violations(browser, live_server):
    context = browser.new_context(bypass_csp=True)  # to inject axe-core (the page itself allows only its own scripts)
    page = context.new_page()
    page.goto(f"{live_server}/ui")
    page.wait_for_function(PLOTS_READY, timeout=WAIT_MS)
    page.add_script_tag(path=str(VENDOR))
    violations = page.evaluate(
        "axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map("
        "v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))})))"
    )
    serious = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not serious, serious
    context.close()


def test_the_page_allows_only_its_own_origin(http):
    response = http.get("/")
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "cdn" not in response.text.lower() and "https://" not in response.text
    for asset in ("calculator.js", "plot.js", "calculator.css"):
        assert http.get(f"/ui-assets/{asset}").status_code == 200
