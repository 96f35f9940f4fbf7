"""A new algorithm needs one package and nothing else: the toy Gaussian-sum family (tests/toy_family) declares a
parameter model and a plan and gets privacy, calibration and the HTTP endpoints from the spine. Values are checked
against the closed forms (kα/(2z²) converted exactly; the Gaussian-DP profile written out with scipy here)."""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest
from scipy.stats import norm

from accountants.conversions import epsilon_for_linear_rdp
from accountants.errors import ParameterError
from accountants.family import Cost, Operation
from app.main import create_app
from app.settings import Settings

from .toy_family import registered

DELTA = 1e-6


def gaussian_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP (Balle & Wang 2018, Thm. 8), written out independently of the library."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


@pytest.mark.parametrize(("releases", "z"), [(1, 1.0), (10, 2.0), (1000, 15.0)])
def test_privacy_is_the_closed_form_of_the_plan(releases, z):
    with registered() as family:
        params = {"releases": releases, "clip_norm": 3.0, "noise_multiplier": z}
        report = family.privacy(params, DELTA)
        answers = {a.name: a for a in report.accountants}
        assert family.cost(Operation.PRIVACY, params) is Cost.CHEAP
    rdp, _ = epsilon_for_linear_rdp(releases / (2 * z * z), DELTA)
    assert answers["rdp"].epsilon == pytest.approx(rdp, rel=1e-9) and answers["rdp"].epsilon >= rdp * (1 - 1e-12)
    mu = math.sqrt(releases) / z
    tight = answers["tight"].epsilon
    assert gaussian_delta(mu, tight) <= DELTA * (1 + 1e-9) and gaussian_delta(mu, tight * (1 - 1e-7)) > DELTA
    assert report.accountant == "tight" and report.epsilon == tight < answers["rdp"].epsilon
    assert report.noise.noise_std == pytest.approx(3.0 * z) and report.conventions.steps == releases


@pytest.mark.parametrize("accountant", ["best", "tight", "rdp"])
def test_calibration_is_one_sided_on_the_closed_form(accountant):
    target = 1.5
    with registered() as family:
        report = family.calibrate(
            {"releases": 50, "clip_norm": 1.0, "noise_multiplier": 9.0}, target, DELTA, accountant
        )
    z = report.calibrated_value
    assert report.calibrated_parameter == "noise_multiplier" and report.noise_multiplier == z
    assert any("noise_multiplier given in params was ignored" in w for w in report.warnings)
    assert report.epsilon <= target
    if report.accountant == "tight":
        mu = math.sqrt(50) / z
        assert gaussian_delta(mu, target) <= DELTA and gaussian_delta(math.sqrt(50) / (z * (1 - 1e-6)), target) > DELTA
    else:
        rho = 50 / (2 * z * z)
        assert epsilon_for_linear_rdp(rho, DELTA)[0] <= target * (1 + 1e-9)
        assert epsilon_for_linear_rdp(50 / (2 * (z * (1 - 1e-6)) ** 2), DELTA)[0] > target
        assert {a.name: a.applicable for a in report.accountants}["tight"] is (accountant != "rdp")


def test_privacy_needs_the_knob():
    with registered() as family, pytest.raises(ParameterError, match="noise_multiplier: is required"):
        family.privacy({"releases": 3, "clip_norm": 1.0}, DELTA)


def test_the_service_serves_the_new_family(tmp_path):
    with registered() as family:
        app = create_app(Settings(jobs_db=str(tmp_path / "toy.sqlite3")))
        params = {"releases": 10, "clip_norm": 1.0, "noise_multiplier": 2.0}

        async def calls() -> list[httpx.Response]:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as client:
                return [
                    await client.get("/v1/algorithms"),
                    await client.get(f"/v1/algorithms/{family.id}"),
                    await client.post("/v1/privacy", json={"algorithm": family.id, "params": params, "delta": DELTA}),
                    await client.post(
                        "/v1/calibrate",
                        json={"algorithm": family.id, "params": params, "delta": DELTA, "target_epsilon": 2.0},
                    ),
                    await client.get("/openapi.json"),
                ]

        listing, detail, privacy, calibration, openapi = asyncio.run(calls())
        expected_privacy = family.privacy(params, DELTA)
        expected_sigma = family.calibrate(params, 2.0, DELTA).calibrated_value
        if getattr(app.state, "jobs", None) is not None:
            app.state.jobs.stop()
    assert family.id in {a["id"] for a in listing.json()}
    assert detail.json()["calibrated_parameter"] == "noise_multiplier"
    assert privacy.status_code == 200 and privacy.json()["epsilon"] == expected_privacy.epsilon
    assert calibration.status_code == 200 and calibration.json()["calibrated_value"] == expected_sigma
    schemas = openapi.json()["components"]["schemas"]
    assert {"ToyGaussianSumPrivacyRequest", "ToyGaussianSumCalibrateRequest"} <= set(schemas)
